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

The target's own code (``configurations``, ``build``, ``bug_files``) runs in
the target's child process (``isolate``), under its time limit; should the
child die or hang there, the folder has refc's files alone (``finding.json``
says why). Without isolation it runs in this process, guarded as a user's
code (``target_call``), and only when the discrepancy is not a crash or a
hang, which would take refc down with it.
``bug_files`` must map plain file names to bytes: a path, a name refc writes
itself or text instead of bytes is the target's error (``ExecutionError``),
and nothing is written outside the folder.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Mapping

import numpy as np

from refcompiler.errors import ExecutionError
from refcompiler.files import write_atomic, write_json_atomic
from refcompiler.graph import Graph
from refcompiler.graph_json import graph_to_doc
from refcompiler.limits import shown
from refcompiler.onnx_io.compare import ABS_SLACK, ULP_BOUND
from refcompiler.reference import run_reference
from refcompiler.targets import resolve_target, target_call, target_versions
from refcompiler.targets.isolate import run_target, target_timeout, worker
from refcompiler.targets.verdict import Discrepancy, Kind, judge
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
    files: dict[str, bytes] = {}
    own = None
    if isolate:
        kind, answer = worker(spec).files(graph, d.failing, d.passing, target_timeout(target))
        if kind == "error":  # the target's own code failed making them
            raise ExecutionError(answer)  # type: ignore[arg-type]
        if kind == "lost":  # its child died or hung making them (as it does on this graph, perhaps)
            own = f"not written: the target's child process made none ({answer})"
        else:
            files = answer  # type: ignore[assignment]
    elif d.kind in (Kind.CRASH, Kind.HANG):
        own = f"not written: the target's {d.kind.value} would happen in refc's own process, where build() and bug_files() run"
    else:
        files = target_files(spec, target, graph, d.failing, d.passing)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        write_atomic(str(folder / name), lambda f, data=data: f.write(data))
    save_npz(str(folder / "inputs.npz"), entry)
    save_npz(str(folder / "expected.npz"), {f"{s}.run{k}": v for k, values in enumerate(reference, 1) for s, v in values.items()})
    write_json_atomic(str(folder / "finding.json"), {**_finding_doc(d, spec, d.failing, d.passing), "target_files": own or sorted(files)})
    versions = {"python": sys.version.split()[0], "platform": platform.platform(), **target_versions(spec)}
    text = "".join(f"{k}=={v}\n" for k, v in versions.items())
    write_atomic(str(folder / "versions.txt"), lambda f: f.write(text.encode()))
    write_json_atomic(str(folder / "graph.json"), graph_to_doc(graph))
    return d


# what refc writes in a bug folder itself: a target's bug_files may not name them
REFC_FILES = frozenset({"inputs.npz", "expected.npz", "finding.json", "versions.txt", "graph.json"})
NAME_BYTES = 255  # a file name's length on common file systems


def target_files(spec: str, target: object, graph: Graph, failing_key: str | None, passing_key: str | None) -> dict[str, bytes]:
    """The target's own files for the folder (``bug_files``; in the target's
    child process unless isolation is off), checked: plain file names to bytes."""
    configs: dict = target_call(spec, "configurations()", lambda: {c.key: c for c in target.configurations()})  # type: ignore[attr-defined,assignment]
    if not configs:
        raise ExecutionError(f"target {shown(spec, 200)}'s configurations() returned none")
    program = target_call(spec, "build()", target.build, graph)  # type: ignore[attr-defined]
    failing = configs.get(failing_key or "") or next(iter(configs.values()))
    passing = configs.get(passing_key or "")
    files = target_call(spec, "bug_files()", lambda: dict(target.bug_files(program, failing, passing)))  # type: ignore[attr-defined]
    for name, data in files.items():  # type: ignore[attr-defined]
        problem = _file_problem(name, data)
        if problem is not None:
            raise ExecutionError(f"target {shown(spec, 200)}'s bug_files() returned {problem}; it maps plain file names to bytes")
    return files  # type: ignore[return-value]


def _file_problem(name: object, data: object) -> str | None:
    if not isinstance(name, str):
        return f"a {type(name).__name__} as a file name ({shown(name)})"
    if name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name or len(_encoded(name)) > NAME_BYTES:
        return f"{shown(name)}, not a plain file name"
    if name in REFC_FILES:
        return f"{name!r}, which refc writes itself"
    if not isinstance(data, (bytes, bytearray, memoryview)):
        return f"a {type(data).__name__} for {shown(name)}, not bytes"
    return None


def _encoded(name: str) -> bytes:
    """``name`` as the file system gets it (a lone surrogate it cannot take: too long to write)."""
    try:
        return os.fsencode(name)
    except UnicodeError:
        return b"\0" * (NAME_BYTES + 1)


def _finding_doc(d: Discrepancy, spec: str, failing: str | None, passing: str | None) -> dict[str, object]:
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
