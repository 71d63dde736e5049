"""TVM Relax: DataflowUseInplaceCalls raises on multiply(constant scalar, intermediate).

Needs only apache-tvm (0.27.0.post1) and numpy. Exit 1 while the bug is there.

    y = multiply(const 0.5, add(a, b))

The default pipeline builds and runs it (y = 0.5 * (a + b)); with
DataflowUseInplaceCalls, the pass picks the intermediate add(a, b), argument 1,
as the buffer to compute into, and then fails building the in-place call:
"In-place index 0 is out of range (must be between -1 and 0, inclusive, but is 1)"
(the legalized multiply has the scalar inlined, so it has one tensor argument).
"""
import sys

import numpy as np
import tvm
from tvm import relax
from tvm.script import relax as R


@tvm.script.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((2,), "float32"), b: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        with R.dataflow():
            t = R.add(a, b)
            y = R.multiply(R.const(0.5, "float32"), t)
            R.output(y)
        return y


def run(mod):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    a, b = np.array([1, 2], np.float32), np.array([3, 5], np.float32)
    return vm["main"](tvm.runtime.tensor(a), tvm.runtime.tensor(b)).numpy()


def main():
    print("tvm", tvm.__version__)
    print("default pipeline:", run(Module))  # [2.  3.5]
    try:
        inplace = relax.transform.DataflowUseInplaceCalls()(Module)
    except Exception as e:  # noqa: BLE001 - the bug
        print("DataflowUseInplaceCalls raised:", type(e).__name__, str(e).splitlines()[0])
        return 1
    got = run(inplace)
    print("with DataflowUseInplaceCalls:", got)
    return 0 if np.array_equal(got, np.array([2, 3.5], np.float32)) else 1


if __name__ == "__main__":
    sys.exit(main())
