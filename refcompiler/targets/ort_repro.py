"""``repro.py`` of an onnxruntime bug folder: the text of a script that needs only
numpy and onnxruntime. It reads ``model.onnx``, ``inputs.npz``, ``expected.npz``,
``ort_config.json`` and ``finding.json`` beside it, runs the failing (and the
passing) configuration for two runs feeding each run's outputs back as the next
run's inputs, and exits 1 when the failure shows."""

SCRIPT = r'''"""Reproduce an onnxruntime failure found by refc (needs numpy and onnxruntime only).

Each session runs twice; the outputs NAME.exit of a run are fed back as the inputs
NAME of the next (placeholders saved by the model, and its state). finding.json
says what fails; ort_config.json the configurations. Exit 1: the failure shows.
"""
import json
import os
import sys

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
CFG = json.load(open(os.path.join(HERE, "ort_config.json")))
FINDING = json.load(open(os.path.join(HERE, "finding.json")))
MODEL = open(os.path.join(HERE, "model.onnx"), "rb").read()
INPUTS = dict(np.load(os.path.join(HERE, "inputs.npz")))
EXPECTED = dict(np.load(os.path.join(HERE, "expected.npz")))


def session(c):
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, c["graph_optimization_level"])
    so.enable_mem_pattern = c["mem_pattern"]
    so.enable_cpu_mem_arena = c["arena"]
    so.execution_mode = ort.ExecutionMode.ORT_PARALLEL if c["mode"] == "parallel" else ort.ExecutionMode.ORT_SEQUENTIAL
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    return ort.InferenceSession(MODEL, so, providers=["CPUExecutionProvider"])


def two_runs(c):
    """Storage values after each run, and the arrays a later run changed."""
    s, values, runs, kept = session(c), dict(INPUTS), [], []
    for k in (1, 2):
        fed = {name: values[name] for name in CFG["inputs"]}
        kept += [("input %s of run %d" % (n, k), a, a.copy()) for n, a in fed.items()]
        got = s.run(list(CFG["exits"]), fed)
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
    print("onnxruntime", ort.__version__, "-", FINDING["kind"] + ":", FINDING["detail"])
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
