"""torch.compile (inductor, CPU) fails to generate code for index_add into a one-row tensor.

Found by refc's torch-inductor target on a one-node graph: refc's quantization_profile
with a histogram of one bin, which the target writes as zeros(1).index_add_(0, bins,
ones). Needs only torch. Eager gives [4.]; inductor's C++ backend stops with an
AssertionError in the vectorised store (torch/_inductor/codegen/cpp.py). A target of two
rows, a 1x3 target, scatter_add, or a single index all compile and agree with eager.
Exit 1 when the bug shows.
"""
import sys

import torch

# the parallel C++ loop is what fails: with one thread (OMP_NUM_THREADS=1) inductor compiles it right
torch.set_num_threads(max(2, torch.get_num_threads()))


def f(idx, src):
    return torch.zeros(1).index_add(0, idx, src)


idx = torch.zeros(4, dtype=torch.long)
src = torch.ones(4)
print("torch", torch.__version__)
print("passing configuration (eager):", f(idx, src).tolist())
try:
    got = torch.compile(f, backend="inductor")(idx, src)
except Exception as e:
    print("failing configuration (torch.compile, backend='inductor', CPU):", type(e).__name__, str(e).strip().splitlines()[0])
    sys.exit(1)
print("torch.compile:", got.tolist(), "(fixed)" if got.tolist() == [4.0] else "(wrong result)")
sys.exit(0 if got.tolist() == [4.0] else 1)
