"""The corpus case type (DESIGN §10): a graph plus how to check it, and its
document form. The file format is described in ``fuzz.corpus``; this module
only converts between documents and ``Case`` values, so that both the corpus
(files, replay) and the oracle (which checks a case) can use it without
importing each other.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from specs import INVARIANTS, Level

from refcompiler.errors import MalformedInput
from refcompiler.graph import Graph, Init, Storage, StorageKind, initial_value
from refcompiler.graph_json import graph_from_doc, graph_to_doc
from refcompiler.limits import key_step, shown

__all__ = [
    "ExpectKind",
    "Expect",
    "PASS",
    "reject",
    "Case",
    "TargetRecord",
    "CASE_FIELDS",
    "FindingRecord",
    "finding_from_doc",
    "case_from_doc",
    "case_to_doc",
    "case_inputs",
    "whole_order",
]

# A case's pipeline is data: its length is bounded, as a file's every resource is
# (O2 has 6 passes; a pipeline of thousands is a mistake or an attack).
MAX_PIPELINE_ITEMS = 64

CASE_FIELDS = ("expect", "schedule", "pipeline", "inputs", "found_by", "mutant",
               "scheduler", "scheduler_seed", "scheduler_order", "versions", "command", "target", "finding")


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


# what the graph verifier rejects with (G-1, OWN-1..4); a reject case names one of them
VERIFIER_INVARIANTS = tuple(i for i, inv in INVARIANTS.items() if inv.level is Level.GRAPH)


def reject(invariant: str) -> Expect:
    if invariant not in VERIFIER_INVARIANTS:
        raise ValueError(f"not a verifier invariant id {invariant!r} (known: {', '.join(VERIFIER_INVARIANTS)})")
    return Expect(ExpectKind.REJECT, invariant)


@dataclass(frozen=True)
class TargetRecord:
    """The external compiler a case was found against (``refcompiler.targets``):
    ``spec``, a built-in name or ``module:attribute`` (a plug-in: replay imports it only
    when allowed); its configuration keys then; the failing one and the one that
    passed (a key or ``"reference"``), when the finding named them."""

    spec: str
    configurations: tuple[str, ...] = ()
    failing: str | None = None
    passing: str | None = None

    def to_doc(self) -> dict[str, Any]:
        return {"name": self.spec, "configurations": list(self.configurations), "failing": self.failing, "passing": self.passing}


@dataclass(frozen=True)
class FindingRecord:
    """What a campaign found on a case, for a reader (``refc show`` marks
    ``nodes`` red beside the explanation): the ``signature`` it was kept
    under, its ``explanation``, the graph ``nodes`` the checker named and
    the IR ``instruction`` index of a fault found in IR. Replay does not read
    it: the case's expectation is what is checked again."""

    signature: str
    explanation: str = ""
    nodes: tuple[str, ...] = ()
    instruction: int | None = None

    def to_doc(self) -> dict[str, Any]:
        return {"signature": self.signature, "explanation": self.explanation, "nodes": list(self.nodes), "instruction": self.instruction}


@dataclass(frozen=True)
class Case:
    """A corpus case. ``inputs`` maps storage names to an explicit flat value
    or a seeded ``Init``, as ``Init`` carries both.

    Recorded by a campaign so that replay does what it saw: ``scheduler`` (a
    name or ``module:attribute``) and ``scheduler_seed``, the seed it was
    called with, when the case is checked under that scheduler's own order
    (``schedule`` is then ``None``); ``scheduler_order``, the order it
    produced then (for a reader, and for replay to compare); ``versions``
    (package, version) pairs; ``command``, the campaign's command line."""

    graph: Graph
    expect: Expect = PASS
    pipeline: str = "O2"
    schedule: tuple[str, ...] | None = None
    inputs: tuple[tuple[str, Init], ...] = ()
    found_by: str | None = None
    mutant: str | None = None
    path: str | None = field(default=None, compare=False)
    scheduler: str | None = None
    scheduler_seed: int | None = None
    scheduler_order: tuple[str, ...] | None = None
    versions: tuple[tuple[str, str], ...] = ()
    command: str | None = None
    target: TargetRecord | None = None
    finding: FindingRecord | None = field(default=None, compare=False)

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
    if pipeline.count(",") >= MAX_PIPELINE_ITEMS:
        raise MalformedInput(f"{pipeline.count(',') + 1} passes; a case's pipeline lists at most {MAX_PIPELINE_ITEMS}", path=path, field="pipeline")
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
    recorded = _recorded(meta, path)
    return Case(graph, expect, pipeline, schedule, inputs, found_by, mutant, path, **recorded)


def _recorded(meta: dict[str, Any], path: str | None) -> dict[str, Any]:
    """The fields a campaign records (each optional: older cases lack them)."""
    out: dict[str, Any] = {}
    for key in ("scheduler", "command"):
        value = meta.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise MalformedInput("expected a non-empty string or null", path=path, field=key)
        out[key] = value
    seed = meta.get("scheduler_seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63):
        raise MalformedInput("expected a whole number from 0 to 2**63-1, or null", path=path, field="scheduler_seed")
    out["scheduler_seed"] = seed
    order = meta.get("scheduler_order")
    if order is not None and (not isinstance(order, list) or not all(isinstance(n, str) for n in order)):
        raise MalformedInput("expected a list of node names or null", path=path, field="scheduler_order")
    out["scheduler_order"] = None if order is None else tuple(order)
    versions = meta.get("versions", {})
    if not isinstance(versions, dict) or not all(isinstance(v, str) for v in versions.values()):
        raise MalformedInput("expected an object {package: version string}", path=path, field="versions")
    out["versions"] = tuple(sorted(versions.items()))
    out["target"] = _target(meta.get("target"), path)
    out["finding"] = finding_from_doc(meta.get("finding"), path)
    return out


def finding_from_doc(doc: Any, path: str | None) -> FindingRecord | None:
    """``"finding": {"signature", "explanation", "nodes", "instruction"}`` (or null)."""
    if doc is None:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("signature"), str):
        raise MalformedInput('expected {"signature": text, "explanation": text, "nodes": [names], "instruction": index or null} or null',
                             path=path, field="finding")
    if not isinstance(doc.get("explanation", ""), str):
        raise MalformedInput("expected a string", path=path, field="finding.explanation")
    nodes = doc.get("nodes", [])
    if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
        raise MalformedInput("expected a list of node names", path=path, field="finding.nodes")
    at = doc.get("instruction")
    if at is not None and (isinstance(at, bool) or not isinstance(at, int) or at < 0):
        raise MalformedInput("expected an instruction index (0 or more) or null", path=path, field="finding.instruction")
    unknown = sorted(set(doc) - {"signature", "explanation", "nodes", "instruction"})
    if unknown:
        raise MalformedInput(f"unknown field {shown(unknown[0])}", path=path, field="finding")
    return FindingRecord(doc["signature"], doc.get("explanation", ""), tuple(nodes), at)


def _target(doc: Any, path: str | None) -> TargetRecord | None:
    """``"target": {"name", "configurations", "failing", "passing"}`` (or null)."""
    if doc is None:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("name"), str) or not doc["name"].strip():
        raise MalformedInput('expected {"name": a target, "configurations": [keys], "failing": key, "passing": key} or null', path=path, field="target")
    configs = doc.get("configurations", [])
    if not isinstance(configs, list) or not all(isinstance(c, str) for c in configs):
        raise MalformedInput("expected a list of configuration keys", path=path, field="target.configurations")
    for key in ("failing", "passing"):
        if doc.get(key) is not None and not isinstance(doc[key], str):
            raise MalformedInput("expected a configuration key or null", path=path, field=f"target.{key}")
    unknown = sorted(set(doc) - {"name", "configurations", "failing", "passing"})
    if unknown:
        raise MalformedInput(f"unknown field {unknown[0]!r}", path=path, field="target")
    return TargetRecord(doc["name"], tuple(configs), doc.get("failing"), doc.get("passing"))


def _expect(doc: Any, path: str | None) -> Expect:
    if doc == "pass":
        return PASS
    if isinstance(doc, dict) and set(doc) == {"reject"} and isinstance(doc["reject"], str):
        if doc["reject"] not in VERIFIER_INVARIANTS:
            known = ", ".join(VERIFIER_INVARIANTS)
            raise MalformedInput(f"{doc['reject']!r} is not an invariant the verifier rejects with (known: {known})", path=path, field="expect.reject")
        return Expect(ExpectKind.REJECT, doc["reject"])
    raise MalformedInput('expected "pass" or {"reject": "<invariant id>"}', path=path, field="expect")


def _inputs(graph: Graph, doc: Any, path: str | None) -> tuple[tuple[str, Init], ...]:
    if not isinstance(doc, dict):
        raise MalformedInput("expected an object {storage name: value or {seed}}", path=path, field="inputs")
    out = []
    for name, value in doc.items():
        s = graph.storage_by_name.get(name)
        where = "inputs" + key_step(name)  # a key with control characters or escapes is shown escaped
        if s is None or s.kind is StorageKind.CONSTANT:
            what = "a constant (fixed at compile time)" if s is not None else "no storage"
            raise MalformedInput(f"{shown(name)} names {what}; inputs bind placeholders and owned variables", path=path, field=where)
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
    if case.scheduler is not None:
        doc["scheduler"] = case.scheduler
        doc["scheduler_seed"] = case.scheduler_seed
    if case.scheduler_order is not None:
        doc["scheduler_order"] = list(case.scheduler_order)
    if case.versions:
        doc["versions"] = dict(case.versions)
    if case.command is not None:
        doc["command"] = case.command
    if case.target is not None:
        doc["target"] = case.target.to_doc()
    if case.finding is not None:
        doc["finding"] = case.finding.to_doc()
    return doc


def case_inputs(case: Case) -> dict[str, np.ndarray]:
    """The case's input overrides as arrays of their storage's dtype and shape."""
    out = {}
    for name, init in case.inputs:
        s: Storage = case.graph.storage_by_name[name]
        out[name] = initial_value(replace(s, init=init))
    return out


def whole_order(graph: Graph, order: Sequence[str]) -> tuple[str, ...]:
    """A compiled order as a case's ``schedule``, which names every node:
    ``order`` with the nodes it lacks (the dead code the compiler dropped
    before scheduling) put each after the last node it reads, in the graph's
    order (a node after the nodes it reads, in a valid graph)."""
    position = {n: i for i, n in enumerate(order)}
    anchor: dict[str, int] = {}  # a missing node -> the position in ``order`` it follows (-1: first)
    following: dict[int, list[str]] = {}
    for node in graph.nodes:
        if node.name not in position:
            at = max((position[r.name] if r.name in position else anchor.get(r.name, -1) for r in node.inputs), default=-1)
            anchor[node.name] = at
            following.setdefault(at, []).append(node.name)
    placed = list(following.get(-1, ()))
    for i, name in enumerate(order):
        placed += [name, *following.get(i, ())]
    return tuple(placed)
