"""torch.compile passes a range's (start, stop, step) to Tensor.permute instead of its elements.

Found by refc's torch-inductor target (refcompiler/targets/torch_inductor.py) on the
transpose of examples/sgd_momentum.json. One op; needs only torch.
Eager: permute(*range(1, -1, -1)) == permute(1, 0). Under torch.compile (any
backend, also "eager") dynamo calls permute(1, -1, -1) and fails.
Exit 1 when the bug shows.
"""
import sys

import torch


def f(x):
    return x.permute(*range(x.dim() - 1, -1, -1))


x = torch.randn(4, 3)
print("torch", torch.__version__)
print("passing configuration (eager):", tuple(f(x).shape))
try:
    got = torch.compile(f, backend="eager")(x)
except Exception as e:
    print("failing configuration (torch.compile, backend='eager'):", type(e).__name__, str(e).splitlines()[1].strip())
    sys.exit(1)
print("torch.compile:", tuple(got.shape), "(fixed)")
