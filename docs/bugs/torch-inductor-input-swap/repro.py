"""torch.compile (inductor, CPU) swaps two graph inputs wrongly: the second input gets
the first one's new value instead of its old one.

Found by refc's torch-inductor target on a two-node graph: two saves that exchange two
placeholders (save p0 into p1, save p1 into p0; saves write at exit, each with the value
at entry). The program is `t = a.clone(); a.copy_(b); b.copy_(t)`. Eager and
torch.compile with backend="aot_eager" swap; with backend="inductor" both inputs end up
holding b's old value: the clone of `a` is read after `a` was overwritten. Needs only
torch. Exit 1 when the bug shows.
"""
import sys

import torch


def swap(a, b):
    t = a.clone()
    a.copy_(b)
    b.copy_(t)


a0, b0 = torch.arange(4.0), torch.arange(4.0) + 10
print("torch", torch.__version__)
for backend in ("eager", "aot_eager", "inductor"):
    torch._dynamo.reset()
    a, b = a0.clone(), b0.clone()
    (swap if backend == "eager" else torch.compile(swap, backend=backend))(a, b)
    right = torch.equal(a, b0) and torch.equal(b, a0)
    status = "passing" if right else "failing"
    print(f"{status} configuration ({backend}): a={a.tolist()} b={b.tolist()} (want a={b0.tolist()} b={a0.tolist()})")
    if not right:
        sys.exit(1)
print("inductor swaps the inputs (fixed)")
