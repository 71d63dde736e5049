"""A bug folder a target's maintainers can run without refc.

``write_bug_folder(folder, spec, graph, inputs)`` runs the target on the graph
again (in its child process), judges the outcome, and when the discrepancy is
still there writes:

- the target's own files (``Target.bug_files``: for onnxruntime ``model.onnx``,
  ``ort_config.json`` and ``repro.py``, a script using only numpy and the target);
- ``inputs.npz``: every placeholder and owned variable at entry to the first run;
- ``expected.npz``: refc's reference after each run (``NAME.runK``);
- ``finding.json``: kind, invariant, the failing and the passing configuration,
  what differed after which run, and the bound that applied;
- ``versions.txt``, and ``graph.json`` (the refc graph, for refc's side).

Every file is written atomically. Returns the discrepancy, or ``None`` (nothing
written) when the target no longer fails on the graph.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path
from typing import Mapping

import numpy as np

from refcompiler.files import write_atomic, write_json_atomic
from refcompiler.graph import Graph
from refcompiler.graph_json import graph_to_doc
from refcompiler.onnx_io.compare import ABS_SLACK, ULP_BOUND
from refcompiler.reference import run_reference
from refcompiler.targets import resolve_target, target_call, target_versions
from refcompiler.targets.isolate import run_target
from refcompiler.targets.verdict import Discrepancy, judge
from refcompiler.values import bind_inputs, save_npz

__all__ = ["write_bug_folder"]


def _reference_runs(graph: Graph, entry: Mapping[str, np.ndarray], runs: int) -> list[dict[str, np.ndarray]]:
    out, values = [], dict(entry)
    for _ in range(runs):
        values = run_reference(graph, values)
        out.append(values)
    return out


def write_bug_folder(folder: str | Path, spec: str, graph: Graph, inputs: Mapping[str, np.ndarray] | None = None, *, isolate: bool = True) -> Discrepancy | None:
    target = resolve_target(spec)
    entry = bind_inputs(graph, inputs or {})
    reference = _reference_runs(graph, entry, 2)
    d = judge(graph, run_target(spec, target, graph, entry, isolate=isolate), reference)
    if d is None:
        return None
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    configs: dict = target_call(spec, "configurations()", lambda: {c.key: c for c in target.configurations()})  # type: ignore[assignment]
    program = target_call(spec, "build()", target.build, graph)
    failing = configs.get(d.failing or "") or next(iter(configs.values()))
    passing = configs.get(d.passing or "")
    files = target_call(spec, "bug_files()", lambda: dict(target.bug_files(program, failing, passing)))
    for name, data in files.items():  # type: ignore[attr-defined]
        write_atomic(str(folder / name), lambda f, data=data: f.write(data))
    save_npz(str(folder / "inputs.npz"), entry)
    save_npz(str(folder / "expected.npz"), {f"{s}.run{k}": v for k, values in enumerate(reference, 1) for s, v in values.items()})
    write_json_atomic(str(folder / "finding.json"), _finding_doc(d, spec, failing.key, passing.key if passing else d.passing))
    versions = {"python": sys.version.split()[0], "platform": platform.platform(), **target_versions(spec)}
    text = "".join(f"{k}=={v}\n" for k, v in versions.items())
    write_atomic(str(folder / "versions.txt"), lambda f: f.write(text.encode()))
    write_json_atomic(str(folder / "graph.json"), graph_to_doc(graph))
    return d


def _finding_doc(d: Discrepancy, spec: str, failing: str, passing: str | None) -> dict[str, object]:
    return {
        "target": spec,
        "kind": d.kind.value,
        "invariant": d.invariant,
        "detail": d.detail,
        "failing": failing,
        "passing": passing,
        "storage": d.storage,
        "run": d.run,
        "bitwise": d.bitwise,
        "ulp_bound": ULP_BOUND,
        "abs_slack": ABS_SLACK,
    }
