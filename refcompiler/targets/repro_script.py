"""``repro.py`` of a bug folder: the text of a script that needs only numpy and
the target's own package. It reads ``model.onnx``, ``inputs.npz``,
``expected.npz``, the target's configuration file and ``finding.json`` beside it,
runs the failing (and the passing) configuration for two runs feeding each run's
outputs back as the next run's inputs, and exits 1 when the failure shows.

One script per target = a head (its imports and files), the target's ``session(c)``
(a configuration -> a function from the feeds to the outputs, in the order of
``CFG["exits"]``) and the common part (two runs, ULPs, the verdict)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ort_script", "tvm_script", "config_json"]


def config_json(exits: tuple[tuple[str, str], ...], inputs: tuple[str, ...], failing: Any, passing: Any) -> bytes:
    """The configuration file a script reads: output -> storage, the input names,
    and the failing and passing configurations in the target's own terms."""
    return json.dumps({"exits": dict(exits), "inputs": list(inputs), "failing": failing, "passing": passing}, indent=2).encode()


_HEAD = r'''"""Reproduce a @NAME@ failure found by refc (needs numpy and @NEEDS@ only).

Each session runs twice; the outputs NAME.exit of a run are fed back as the inputs
NAME of the next (placeholders saved by the model, and its state). finding.json
says what fails; @CONFIG@ the configurations. Exit 1: the failure shows.
"""
import json
import os
import sys

import numpy as np
@IMPORTS@

HERE = os.path.dirname(os.path.abspath(__file__))
CFG = json.load(open(os.path.join(HERE, "@CONFIG@")))
FINDING = json.load(open(os.path.join(HERE, "finding.json")))
MODEL = open(os.path.join(HERE, "model.onnx"), "rb").read()
INPUTS = dict(np.load(os.path.join(HERE, "inputs.npz")))
EXPECTED = dict(np.load(os.path.join(HERE, "expected.npz")))
'''

_ORT = r'''

def session(c):
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, c["graph_optimization_level"])
    so.enable_mem_pattern = c["mem_pattern"]
    so.enable_cpu_mem_arena = c["arena"]
    so.execution_mode = ort.ExecutionMode.ORT_PARALLEL if c["mode"] == "parallel" else ort.ExecutionMode.ORT_SEQUENTIAL
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    s = ort.InferenceSession(MODEL, so, providers=["CPUExecutionProvider"])
    return lambda feeds: s.run(list(CFG["exits"]), feeds)
'''

_TVM = r'''

def pipeline(spec):
    """relax.build's relax_pipeline: a pipeline's name, or pass names under tvm.relax."""
    if isinstance(spec, str):
        return spec
    passes = []
    for name in spec:
        obj = relax
        for part in name.split("."):
            obj = getattr(obj, part)
        passes.append(obj())
    return tvm.transform.Sequential(passes)


def aligned(a):
    """A copy of a at a 64-byte boundary (what TVM takes through DLPack without a copy)."""
    raw = np.empty(a.nbytes + 64, np.uint8)
    start = (-raw.ctypes.data) % 64
    out = raw[start : start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def session(c):
    mod = from_onnx(onnx.load_from_string(MODEL))
    vm = relax.VirtualMachine(relax.build(mod, "llvm", relax_pipeline=pipeline(c["relax_pipeline"])), tvm.cpu())

    def run(feeds):
        own = [(feeds[n], aligned(feeds[n])) for n in CFG["inputs"]]
        out = vm["main"](*[tvm.runtime.from_dlpack(a) for _, a in own])
        for caller, mine in own:  # a write into an input shows in the caller's array
            caller[...] = mine
        return [np.from_dlpack(t) for t in ([out] if isinstance(out, tvm.runtime.Tensor) else out)]

    return run
'''

_COMMON = r'''

def two_runs(c):
    """Storage values after each run, and the arrays a later run changed."""
    run, values, runs, kept = session(c), dict(INPUTS), [], []
    for k in (1, 2):
        fed = {name: values[name].copy() for name in CFG["inputs"]}
        kept += [("input %s of run %d" % (n, k), a, a.copy()) for n, a in fed.items()]
        got = run(fed)
        kept += [("output %s of run %d" % (n, k), a, a.copy()) for n, a in zip(CFG["exits"], got)]
        values.update({CFG["exits"][n]: a.copy() for n, a in zip(CFG["exits"], got)})
        runs.append(dict(values))
    return runs, [what for what, a, copy in kept if a.tobytes() != copy.tobytes()]


def ulps(a, b):
    def ordered(x):
        i = np.ascontiguousarray(x, dtype=np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    if a.dtype != np.float32:
        return 0 if a.tobytes() == b.tobytes() else 2**32
    if (np.isnan(a) != np.isnan(b)).any():
        return 2**32
    return int(np.abs(ordered(np.nan_to_num(a, nan=0)) - ordered(np.nan_to_num(b, nan=0))).max(initial=0))


def main():
    kind, storage, run = FINDING["kind"], FINDING["storage"], FINDING["run"]
    print(VERSION, "-", FINDING["kind"] + ":", FINDING["detail"])
    if CFG["passing"] is not None and kind != "reference":
        two_runs(CFG["passing"])
        print("passing configuration ran:", CFG["passing"]["key"])
    print("failing configuration:", CFG["failing"]["key"])
    runs, changed = two_runs(CFG["failing"])  # an error or a crash shows here
    if kind == "changed":
        print("changed by a later run:", changed)
        return 1 if changed else 0
    if kind in ("error", "crash", "hang"):
        print("ran without failing")
        return 0
    got = runs[run - 1][storage]
    want = EXPECTED["%s.run%d" % (storage, run)] if kind == "reference" else two_runs(CFG["passing"])[0][run - 1][storage]
    d = ulps(got, want)
    print("%s after run %d: %d ULPs apart (%s owed)" % (storage, run, d, "bit for bit" if FINDING["bitwise"] else "%d ULPs" % FINDING["ulp_bound"]))
    print("failing:", got.ravel()[:8], "\nother:  ", want.ravel()[:8])
    fails = got.tobytes() != want.tobytes() if FINDING["bitwise"] else d > FINDING["ulp_bound"]
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
'''


def _script(name: str, needs: str, config: str, imports: str, part: str) -> str:
    head = _HEAD.replace("@NAME@", name).replace("@NEEDS@", needs).replace("@CONFIG@", config).replace("@IMPORTS@", imports)
    return head + part + _COMMON


def ort_script() -> str:
    """The onnxruntime folder's script (configurations in ``ort_config.json``)."""
    return _script("onnxruntime", "onnxruntime", "ort_config.json", 'import onnxruntime as ort\n\nVERSION = "onnxruntime " + ort.__version__', _ORT)


def tvm_script() -> str:
    """The TVM folder's script (``tvm_config.json``: each configuration's ``relax_pipeline``)."""
    imports = 'import onnx\nimport tvm\nfrom tvm import relax\nfrom tvm.relax.frontend.onnx import from_onnx\n\nVERSION = "tvm " + tvm.__version__'
    return _script("TVM Relax", "apache-tvm (with onnx, which its ONNX frontend reads)", "tvm_config.json", imports, _TVM)
