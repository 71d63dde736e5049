"""TVM Relax: FoldConstant after DataflowUseInplaceCalls makes a call write into a constant.

Needs only apache-tvm (0.27.0.post1) and numpy. Exit 1 while the bug is there.

    new = add(acc, relu(const [0.75]))

DataflowUseInplaceCalls computes the add into the buffer of relu(const) (an
intermediate that dies there): call_tir_inplace(add_inplace, (acc, r), [1]).
FoldConstant then folds relu(const) into a module constant, so the in-place add
writes into that constant: every run adds its result into it. Called twice with
acc = [1]: the first run returns [1.75], the second [2.75], and the first run's
result becomes [2.75] too (it is the constant's buffer).
"""
import sys

import numpy as np
import tvm
from tvm import relax
from tvm.relax import transform as T
from tvm.script import relax as R


@tvm.script.ir_module
class Module:
    @R.function
    def main(acc: R.Tensor((1,), "float32")) -> R.Tensor((1,), "float32"):
        with R.dataflow():
            r = R.nn.relu(R.const(np.array([0.75], "float32")))
            new = R.add(acc, r)
            R.output(new)
        return new


def two_runs(passes):
    mod = tvm.transform.Sequential(passes)(Module)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    one = np.ones(1, np.float32)
    first = vm["main"](tvm.runtime.tensor(one))
    kept = first.numpy()
    second = vm["main"](tvm.runtime.tensor(one)).numpy()
    return kept, second, first.numpy()


def main():
    print("tvm", tvm.__version__)
    want = np.array([1.75], np.float32)
    passing = two_runs([T.DataflowUseInplaceCalls(), T.LegalizeOps()])
    print("DataflowUseInplaceCalls, LegalizeOps: run 1 %s, run 2 %s, run 1's result after run 2 %s" % passing)
    failing = two_runs([T.DataflowUseInplaceCalls(), T.LegalizeOps(), T.FoldConstant()])
    print("DataflowUseInplaceCalls, LegalizeOps, FoldConstant: run 1 %s, run 2 %s, run 1's result after run 2 %s" % failing)
    return 0 if all(np.array_equal(a, want) for a in failing) else 1


if __name__ == "__main__":
    sys.exit(main())
