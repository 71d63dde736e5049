"""ONNX's own node tests run through the importer, the reference and the compiled O2 pipeline.

A node test (``onnx.backend.test.case.node.collect_testcases()``) is
*collected* here when every op of its graph is one the importer knows
(``CONVERTERS``); it is *supported* when the importer accepts it (else the
refusal is its reason); it *passes* when, for every data set, both the
reference interpreter and the compiled O2 program give ONNX's expected outputs
under ``compare.within`` (bit for bit when all its ops are exact). An int64
graph input (a shape or axes fed as an input) is fixed at import from the data
set, as ``refc import --inputs`` does; float32 and int32 inputs are bound at
run time, so NaN and infinity inputs are tested too.
"""

from __future__ import annotations

import functools
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from refcompiler.driver import compile_graph, run_compiled
from refcompiler.errors import RefCompilerError
from refcompiler.onnx_io.compare import EXACT_ONNX_OPS, within
from refcompiler.onnx_io.converters import CONVERTERS
from refcompiler.onnx_io.importer import import_model
from refcompiler.reference import run_reference
from refcompiler.values import same_bits
from refcompiler.verifier import violations

__all__ = ["CaseResult", "node_tests", "collected", "run_case", "run_all", "table"]


@dataclass(frozen=True)
class CaseResult:
    name: str
    group: str  # the case's ONNX op types, e.g. "ReduceSum" or "Mul+ReduceSum"
    status: str  # "passed", "failed" or "unsupported"
    reason: str = ""
    ulps: int = 0


@functools.cache
def node_tests() -> tuple[Any, ...]:
    """Every node test the installed onnx ships (building them takes a few seconds)."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return tuple(collect_testcases(None))


def _ops(case: Any) -> set[str]:
    return {n.op_type for n in case.model.graph.node}


def collected() -> list[Any]:
    """The node tests whose ops are all ones the importer knows."""
    return [c for c in node_tests() if _ops(c) <= set(CONVERTERS)]


def group_of(case: Any) -> str:
    return "+".join(sorted(_ops(case) - {"Constant"})) or "Constant"


def run_case(case: Any) -> CaseResult:
    group = group_of(case)
    exact = _ops(case) <= EXACT_ONNX_OPS
    worst = 0
    for inputs, expected in case.data_sets:
        feeds = _feeds(case, inputs)
        fixed = {k: v for k, v in feeds.items() if v.dtype == np.int64}
        try:
            imported = import_model(case.model, path=case.name, values=fixed)
        except RefCompilerError as e:
            return CaseResult(case.name, group, "unsupported", _reason(str(e), case.name))
        bad = violations(imported.graph)
        if bad:
            return CaseResult(case.name, group, "failed", f"the imported graph is invalid: {bad[0]}")
        run_inputs = {imported.inputs[k]: v for k, v in feeds.items() if k in imported.inputs}
        problem, ulps = _check(case, imported, run_inputs, expected, exact)
        if problem:
            return CaseResult(case.name, group, "failed", problem, ulps)
        worst = max(worst, ulps)
    return CaseResult(case.name, group, "passed", ulps=worst)


def _reason(message: str, name: str) -> str:
    return message[len(name) + 2 :] if message.startswith(f"{name}: ") else message


def _feeds(case: Any, inputs: list[np.ndarray]) -> dict[str, np.ndarray]:
    g = case.model.graph
    init = {t.name for t in g.initializer}
    names = [vi.name for vi in g.input if vi.name not in init]
    if len(names) != len(inputs):
        raise ValueError(f"{case.name}: {len(inputs)} inputs for {len(names)} graph inputs")
    return {n: np.asarray(v) for n, v in zip(names, inputs, strict=True)}


def _check(case: Any, imported: Any, run_inputs: dict[str, np.ndarray], expected: list[np.ndarray], exact: bool) -> tuple[str, int]:
    """('' when both agree with ONNX, else what differs; the largest ULP distance)."""
    try:
        ref = run_reference(imported.graph, run_inputs)
        comp = run_compiled(compile_graph(imported.graph, pipeline="O2"), run_inputs)
    except RefCompilerError as e:
        return f"refc could not run it: {e}", 0
    worst = 0
    names = [vi.name for vi in case.model.graph.output]
    for name, want in zip(names, expected, strict=True):
        target = imported.outputs[name]
        want = np.asarray(want)
        if not same_bits(ref[target], comp[target]):
            return f"output '{name}': the compiled O2 program differs from the reference (SEM-1)", 0
        ok, ulps = within(ref[target], want, exact=exact)
        worst = max(worst, ulps)
        if not ok:
            return f"output '{name}': {ref[target].dtype}{list(ref[target].shape)} vs expected {want.dtype}{list(want.shape)}, {ulps} ULP", ulps
    return "", worst


def run_all() -> list[CaseResult]:
    with np.errstate(all="ignore"):
        return [run_case(c) for c in collected()]


def table(results: list[CaseResult]) -> dict[str, Any]:
    """Per group: collected, supported, passed, the largest ULP seen; and every
    unsupported or failed case with its reason."""
    rows: dict[str, Counter[str]] = {}
    worst: Counter[str] = Counter()
    for r in results:
        c = rows.setdefault(r.group, Counter())
        c["collected"] += 1
        c["supported"] += r.status != "unsupported"
        c["passed"] += r.status == "passed"
        worst[r.group] = max(worst[r.group], r.ulps)
    return {
        "groups": [{"op": g, **{k: rows[g][k] for k in ("collected", "supported", "passed")}, "max_ulps": worst[g]} for g in sorted(rows)],
        "unsupported": [{"case": r.name, "op": r.group, "reason": r.reason} for r in results if r.status == "unsupported"],
        "failed": [{"case": r.name, "op": r.group, "reason": r.reason} for r in results if r.status == "failed"],
    }


def render(data: dict[str, Any]) -> str:
    """The table of ``table``: one row per op group, then the reasons of every
    unsupported case (counted), then every failure."""
    rows = [("op", "collected", "supported", "passed", "max ULP")]
    rows += [(g["op"], str(g["collected"]), str(g["supported"]), str(g["passed"]), str(g["max_ulps"])) for g in data["groups"]]
    total = [sum(g[k] for g in data["groups"]) for k in ("collected", "supported", "passed")]
    rows.append(("total", *(str(t) for t in total), ""))
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    lines = ["onnx: ONNX node tests imported, run by the reference and by the compiled O2 pipeline"]
    lines += ["  " + "  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths, strict=True))) for r in rows]
    reasons = Counter((u["op"], u["reason"]) for u in data["unsupported"])
    lines.append("  unsupported (cases, op, reason):")
    lines += [f"    {n:3d}  {op}: {why}" for (op, why), n in sorted(reasons.items())]
    lines += [f"  FAILED {f['case']} ({f['op']}): {f['reason']}" for f in data["failed"]]
    return "\n".join(lines) + "\n"
