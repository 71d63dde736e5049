"""Corpus cases (DESIGN §10): a graph document plus how to check it.

A case file is a ``refc-graph/1`` document with these extra top-level fields:

- ``"expect"``: ``"pass"`` (the compiler must agree with the reference under
  every schedule checked) or ``{"reject": "OWN-2"}`` (the verifier must reject
  the graph with that invariant id). A plain graph file has no ``expect`` and
  is read as ``"pass"``.
- ``"schedule"`` (optional): node names in order. Without it, the oracle
  checks the standard set of schedules (``fuzz.schedules.case_schedules``).
- ``"pipeline"`` (optional, default ``"O2"``): the optimised pipeline,
  checked beside ``O0``.
- ``"inputs"`` (optional): ``{storage: value}`` overriding initial values of
  placeholders and owned variables; a value is nested lists or
  ``{"seed": n}`` (integers also take ``"low"``/``"high"``).
- ``"found_by"``, ``"mutant"``: provenance (free text; the mutant the case
  was found against, or null).

Loading goes through ``refcompiler.graph_json.graph_from_doc``, which keeps
the extra fields in ``graph.meta``; ``load_case`` reads them from there.
"""

from __future__ import annotations

import enum
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from specs import INVARIANTS

from refcompiler.errors import MalformedInput
from refcompiler.graph import Graph, Init, Storage, StorageKind, initial_value
from refcompiler.graph_json import graph_from_doc, graph_to_doc, read_json, write_atomic

if TYPE_CHECKING:
    from fuzz.oracle import Finding

__all__ = [
    "ExpectKind",
    "Expect",
    "PASS",
    "reject",
    "Case",
    "CASE_FIELDS",
    "case_from_doc",
    "case_to_doc",
    "load_case",
    "write_case",
    "format_case_doc",
    "write_text_atomic",
    "case_files",
    "case_inputs",
    "replay",
]

CASE_FIELDS = ("expect", "schedule", "pipeline", "inputs", "found_by", "mutant")


class ExpectKind(enum.Enum):
    PASS = "pass"
    REJECT = "reject"


@dataclass(frozen=True)
class Expect:
    """What a case must do: pass every check, or be rejected with ``invariant``."""

    kind: ExpectKind
    invariant: str | None = None

    def to_doc(self) -> Any:
        return "pass" if self.kind is ExpectKind.PASS else {"reject": self.invariant}

    def __str__(self) -> str:
        return "pass" if self.kind is ExpectKind.PASS else f"reject {self.invariant}"


PASS = Expect(ExpectKind.PASS)


def reject(invariant: str) -> Expect:
    if invariant not in INVARIANTS:
        raise ValueError(f"unknown invariant id {invariant!r}")
    return Expect(ExpectKind.REJECT, invariant)


@dataclass(frozen=True)
class Case:
    """A corpus case. ``inputs`` maps storage names to an explicit flat value
    or a seeded ``Init``, as ``Init`` carries both."""

    graph: Graph
    expect: Expect = PASS
    pipeline: str = "O2"
    schedule: tuple[str, ...] | None = None
    inputs: tuple[tuple[str, Init], ...] = ()
    found_by: str | None = None
    mutant: str | None = None
    path: str | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        return self.path or self.graph.name


def case_from_doc(doc: Any, *, path: str | None = None) -> Case:
    """A case from a parsed document; ``MalformedInput`` names the file and field."""
    graph = graph_from_doc(doc, path=path)
    meta = dict(graph.meta)
    graph = replace(graph, meta=tuple((k, v) for k, v in graph.meta if k not in CASE_FIELDS))
    expect = _expect(meta.get("expect", "pass"), path)
    pipeline = meta.get("pipeline", "O2")
    if not isinstance(pipeline, str) or not pipeline.strip():
        raise MalformedInput("expected a pipeline name such as \"O2\"", path=path, field="pipeline")
    schedule = meta.get("schedule")
    if schedule is not None:
        if not isinstance(schedule, list) or not all(isinstance(n, str) for n in schedule):
            raise MalformedInput("expected a list of node names", path=path, field="schedule")
        schedule = tuple(schedule)
    raw_inputs = meta.get("inputs")
    inputs = _inputs(graph, {} if raw_inputs is None else raw_inputs, path)
    found_by, mutant = meta.get("found_by"), meta.get("mutant")
    for key, value in (("found_by", found_by), ("mutant", mutant)):
        if value is not None and not isinstance(value, str):
            raise MalformedInput("expected a string or null", path=path, field=key)
    return Case(graph, expect, pipeline, schedule, inputs, found_by, mutant, path)


def _expect(doc: Any, path: str | None) -> Expect:
    if doc == "pass":
        return PASS
    if isinstance(doc, dict) and set(doc) == {"reject"} and isinstance(doc["reject"], str):
        if doc["reject"] not in INVARIANTS:
            known = ", ".join(INVARIANTS)
            raise MalformedInput(f"unknown invariant id {doc['reject']!r} (known: {known})", path=path, field="expect.reject")
        return Expect(ExpectKind.REJECT, doc["reject"])
    raise MalformedInput('expected "pass" or {"reject": "<invariant id>"}', path=path, field="expect")


def _inputs(graph: Graph, doc: Any, path: str | None) -> tuple[tuple[str, Init], ...]:
    if not isinstance(doc, dict):
        raise MalformedInput("expected an object {storage name: value or {seed}}", path=path, field="inputs")
    out = []
    for name, value in doc.items():
        where = f"inputs.{name}"
        s = graph.storage_by_name.get(name)
        if s is None or s.kind is StorageKind.CONSTANT:
            what = "a constant (fixed at compile time)" if s is not None else "no storage"
            raise MalformedInput(f"'{name}' names {what}; inputs bind placeholders and owned variables", path=path, field=where)
        # The storage parser checks seeds, bounds and nested values; reuse it.
        probe = {"format": "refc-graph/1", "nodes": [], "storage": [
            {"name": "v", "kind": "placeholder", "dtype": s.dtype.value, "shape": list(s.shape), "init": value}]}
        try:
            init = graph_from_doc(probe).storage[0].init
        except MalformedInput as e:
            # e reads "storage[0] ('v').init<sub-field>: message"; name the case's field instead
            probe_field = e.field or ""
            message = str(e)[len(probe_field) + 2 :] if probe_field else str(e)
            sub = probe_field.split(".init", 1)[1] if ".init" in probe_field else ""
            raise MalformedInput(message, path=path, field=where + sub) from None
        assert init is not None
        out.append((name, init))
    return tuple(out)


def case_to_doc(case: Case) -> dict[str, Any]:
    """The case as a document: the graph's canonical document plus the case fields."""
    doc = graph_to_doc(replace(case.graph, meta=()))
    doc["expect"] = case.expect.to_doc()
    if case.schedule is not None:
        doc["schedule"] = list(case.schedule)
    doc["pipeline"] = case.pipeline
    if case.inputs:
        inputs = {}
        for name, init in case.inputs:
            s = case.graph.storage_by_name[name]
            entry = graph_to_doc(replace(case.graph, storage=(replace(s, init=init),), nodes=(), meta=()))["storage"][0]
            inputs[name] = entry["init"]
        doc["inputs"] = inputs
    doc["found_by"] = case.found_by
    doc["mutant"] = case.mutant
    return doc


def load_case(path: str | os.PathLike[str]) -> Case:
    return case_from_doc(read_json(path), path=str(path))


def format_case_doc(doc: dict[str, Any]) -> str:
    """A case document as text in the style of ``examples/``: top-level fields
    one per line, one line per storage entry and per node. Valid JSON."""
    lines = []
    for key, value in doc.items():
        if key in ("storage", "nodes") and isinstance(value, list) and value:
            items = ",\n  ".join(json.dumps(v) for v in value)
            lines.append(f"{json.dumps(key)}: [\n  {items}]")
        else:
            lines.append(f"{json.dumps(key)}: {json.dumps(value)}")
    return "{" + ",\n ".join(lines) + "}\n"


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) through ``refcompiler.graph_json.write_atomic``."""
    write_atomic(path, lambda f: f.write(text.encode("utf-8")))


def write_case(path: str | os.PathLike[str], case: Case) -> None:
    """Write ``case`` (``format_case_doc``) atomically."""
    write_text_atomic(path, format_case_doc(case_to_doc(case)))


def case_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The case files ``paths`` name: a file as it is, a directory's ``*.json``
    files (recursively, sorted). A path that does not exist is a ``MalformedInput``."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(p.rglob("*.json")))
        elif p.exists():
            out.append(p)
        else:
            raise MalformedInput("no such file or directory", path=str(p))
    return out


def case_inputs(case: Case) -> dict[str, np.ndarray]:
    """The case's input overrides as arrays of their storage's dtype and shape."""
    out = {}
    for name, init in case.inputs:
        s: Storage = case.graph.storage_by_name[name]
        out[name] = initial_value(replace(s, init=init))
    return out


def replay(case: Case, *, mutant: str | None = None) -> "Finding | None":
    """Check ``case`` as the corpus does and return the first finding, or
    ``None`` when it meets its expectation: a ``reject`` case must be rejected
    with its id; a ``pass`` case must pass under its schedule (or, without
    one, the standard set of schedules), ``O0`` and its pipeline."""
    from fuzz.oracle import check_case

    return check_case(case, mutant=mutant).finding
