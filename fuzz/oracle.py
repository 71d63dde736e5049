"""The oracle chain (DESIGN §7): static, proof and dynamic checks of one case.

``check(graph, schedule, pipeline, mutant)`` returns ``None`` or the first
``Finding``: the stage that caught it, the invariant id, a short explanation,
and a ``signature`` (invariant, stage, op kinds involved) that a campaign
deduplicates failures by. In order:

1. static: the graph verifier accepts a graph expected to pass, or rejects
   one expected to be rejected with the expected id (G-1, OWN-1..4);
2. proof: SCH-2 by reachability (``refcompiler.proofs.prove``): every pair of
   conflicting nodes is ordered by the dependency model;
3. dynamic, for ``O0`` and the pipeline under test: compile (the driver
   verifies the IR after lowering and after every pass), check the schedule
   the compiler used against the *correct* dependency model (SCH-1; an
   explicit schedule that is illegal must be rejected), run twice under the
   sanitizer, and compare every placeholder and owned variable bit for bit
   with the reference after each run (SEM-1). Comparing both pipelines with
   the reference compares ``O0`` with ``O2``; the explanation says which one
   departs.

The reference interpreter and the correct dependency model run *outside*
the mutant (they are the oracle); the verifier, the proof, the schedulers,
the compiler and the IR interpreter run inside ``mutants.activate(mutant)``.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping, Sequence

import numpy as np

from specs import OpKind

from refcompiler.deps import check_schedule
from refcompiler.driver import compile_graph, fit_schedule, run_compiled
from refcompiler.errors import InvariantViolation, RefCompilerError
from refcompiler.graph import Graph, StorageKind
from refcompiler.mutants import activate
from refcompiler.proofs import Verdict, prove
from refcompiler.reference import run_reference
from refcompiler.schedulers import resolve_scheduler
from refcompiler.values import Values, same_bits
from refcompiler.verifier import violations

from fuzz.corpus import PASS, Case, Expect, ExpectKind, case_inputs
from fuzz.schedules import EXHAUSTIVE_LIMIT, ScheduleChoice, ScheduleSource, case_schedules, schedulable

__all__ = [
    "Stage",
    "Signature",
    "Finding",
    "CaseReport",
    "CRASH",
    "check",
    "check_case",
    "check_rejected",
    "iter_findings",
    "reference_runs",
    "legal_on_correct_compiler",
]

# The signature's "invariant" when no invariant id applies: refc itself raised
# an unexpected exception, or a run failed with an ExecutionError.
CRASH = "crash"
ERROR = "error"

Runs = tuple[Values, Values]


class Stage(enum.Enum):
    """Where in the oracle chain a finding was made."""

    VERIFY = "verify"  # graph verifier (G-1, OWN-*)
    REFERENCE = "reference"  # the reference interpreter cannot run the case
    PROOF = "proof"  # SCH-2 by the dependency model
    COMPILE = "compile"  # scheduling, lowering, IR verifier after lowering and each pass, allocator
    SCHEDULE = "schedule"  # the compiler used a schedule the correct model rejects (SCH-1)
    EXECUTE = "execute"  # the IR interpreter and its sanitizer
    DIFFERENTIAL = "differential"  # bit-exact comparison with the reference (SEM-1)


@dataclass(frozen=True, order=True)
class Signature:
    """What a campaign deduplicates failures by."""

    invariant: str
    stage: str
    kinds: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.invariant} at {self.stage} [{', '.join(self.kinds)}]"

    @property
    def slug(self) -> str:
        """A file-name friendly form, e.g. ``SEM-1.differential.add-save``."""
        return ".".join([self.invariant, self.stage, "-".join(self.kinds) or "none"])

    def to_doc(self) -> dict[str, object]:
        return {"invariant": self.invariant, "stage": self.stage, "kinds": list(self.kinds)}


@dataclass(frozen=True)
class Finding:
    """One broken expectation. ``invariant`` is an id of ``specs.INVARIANTS``,
    or ``None`` when refc crashed or a run failed without one. ``kinds``: the
    op kinds of the nodes involved, sorted. ``schedule``: how the case was
    scheduled; ``order``: the order compiled, when known."""

    stage: Stage
    invariant: str | None
    explanation: str
    kinds: tuple[str, ...] = ()
    pipeline: str | None = None
    schedule: ScheduleChoice | None = None
    order: tuple[str, ...] | None = field(default=None, compare=False)
    crashed: bool = False

    @property
    def signature(self) -> Signature:
        inv = self.invariant or (CRASH if self.crashed else ERROR)
        return Signature(inv, self.stage.value, self.kinds)

    def __str__(self) -> str:
        where = [f"pipeline {self.pipeline}"] if self.pipeline else []
        if self.schedule is not None:
            where.append(self.schedule.describe())
        suffix = f" ({'; '.join(where)})" if where else ""
        return f"{self.invariant or (CRASH if self.crashed else ERROR)} at {self.stage.value}: {self.explanation}{suffix}"


@dataclass(frozen=True)
class CaseReport:
    finding: Finding | None
    schedules: int  # schedules compiled and run (each under every pipeline)


# ---------------------------------------------------------------------------
# Helpers


# IR checkers start a message with the instruction: "instruction 3 `kernel add0(...)`".
_INSTR = re.compile(r"instruction \d+ `\w+\s+([^`(]*)")


def _violation_kinds(e: InvariantViolation, *graphs: Graph) -> tuple[str, ...]:
    """Op kinds of what a violation names, and of the instruction it is about
    (the words between the opcode and the operands: an op and a name)."""
    words = [w for head in _INSTR.findall(e.detail) for w in head.replace("=", " ").split()]
    return _kinds((*e.names, *words), *graphs)


def _kinds(names: Sequence[str], *graphs: Graph) -> tuple[str, ...]:
    """Op kinds of the nodes ``names`` refer to: node names, IR values
    (``%node``, ``%node:k``) or instructions named after a node."""
    out = set()
    for raw in names:
        name = raw.lstrip("%")
        base, sep, index = name.rpartition(":")
        if sep and index.isdigit():
            name = base
        for g in graphs:
            node = g.node_by_name.get(name)
            if node is not None:
                out.add(node.op.value)
                break
    return tuple(sorted(out))


def _writer_kinds(graph: Graph, storage: str) -> tuple[str, ...]:
    """The nodes that write ``storage`` (its save or its owner) and the
    producers of the values saved into it."""
    out = set()
    for node in graph.nodes:
        if storage in node.state:
            out.add(node.op.value)
        if node.op is OpKind.SAVE and node.target == storage:
            out.add(node.op.value)
            producer = graph.node_by_name.get(node.inputs[0].name) if node.inputs else None
            if producer is not None:
                out.add(producer.op.value)
    return tuple(sorted(out))


def _crash(stage: Stage, e: BaseException, **kw: object) -> Finding:
    return Finding(stage, None, f"refc raised {type(e).__name__}: {e}", crashed=True, **kw)  # type: ignore[arg-type]


def _first_difference(got: np.ndarray, want: np.ndarray) -> str:
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"got {got.dtype}{list(got.shape)}, want {want.dtype}{list(want.shape)}"
    g = np.ascontiguousarray(got).reshape(-1).view(np.uint8).reshape(got.size, -1)
    w = np.ascontiguousarray(want).reshape(-1).view(np.uint8).reshape(want.size, -1)
    flat = int(np.flatnonzero((g != w).any(axis=1))[0])
    index = tuple(int(i) for i in np.unravel_index(flat, got.shape))
    return f"at {list(index)} got {got.reshape(-1)[flat]!r}, want {want.reshape(-1)[flat]!r}"


# ---------------------------------------------------------------------------
# The stages


def check_rejected(graph: Graph, invariant: str, mutant: str | None = None) -> Finding | None:
    """A graph that breaks ``invariant`` must be rejected with that id."""
    with activate(mutant):
        found = violations(graph)
    if any(v.invariant == invariant for v in found):
        return None
    truth = [v for v in violations(graph) if v.invariant == invariant]
    kinds = _kinds(truth[0].names, graph) if truth else ()
    if not found:
        why = f"the verifier accepts a graph that breaks {invariant}"
        if truth:
            why += f" ({truth[0].detail})"
    else:
        why = f"the verifier rejects with {found[0].invariant} ({found[0].detail}), not {invariant}"
    return Finding(Stage.VERIFY, invariant, why, kinds)


def _static(graph: Graph, mutant: str | None) -> Finding | None:
    try:
        with activate(mutant):
            found = violations(graph)
    except Exception as e:  # a crash in the verifier is a finding, not an abort
        return _crash(Stage.VERIFY, e)
    if found:
        v = found[0]
        return Finding(Stage.VERIFY, v.invariant, f"the verifier rejects a graph expected to pass: {v.detail}", _kinds(v.names, graph))
    return None


def reference_runs(graph: Graph, inputs: Mapping[str, np.ndarray] | None = None) -> Runs:
    """The reference's placeholders and owned variables after one and after two runs."""
    first = run_reference(graph, inputs)
    return first, run_reference(graph, first)


def _proof(graph: Graph, mutant: str | None) -> Finding | None:
    try:
        with activate(mutant):
            proof = prove(graph, engine="reach")
    except InvariantViolation as e:
        return Finding(Stage.PROOF, e.invariant, e.detail, _kinds(e.names, graph))
    except Exception as e:
        return _crash(Stage.PROOF, e)
    if proof.verdict is not Verdict.COUNTEREXAMPLE:
        return None
    cx = proof.counterexample
    a, b = cx.nodes
    s1, s2 = cx.schedules
    why = (
        f"'{a}' and '{b}' both touch '{cx.storage}' (at least one writes) but the dependency model does not "
        f"order them: legal orders {', '.join(s1)} and {', '.join(s2)} disagree"
    )
    return Finding(Stage.PROOF, "SCH-2", why, _kinds((a, b), graph), order=tuple(s2))


def _legal(prepared: Graph, order: Sequence[str]) -> InvariantViolation | None:
    """``None`` when ``order`` is legal under the correct model, else why not."""
    try:
        check_schedule(prepared, list(order))
    except InvariantViolation as e:
        return e
    return None


def _compare(graph: Graph, want: Runs, got: Runs, pipeline: str, choice: ScheduleChoice, order: tuple[str, ...] | None) -> Finding | None:
    for run, (w, g) in enumerate(zip(want, got, strict=True), 1):
        for s in graph.storage:
            if s.kind is StorageKind.CONSTANT:
                continue
            if s.name not in g:
                why = f"after run {run}, the compiled program gives no value for {s.kind.value} '{s.name}'"
            elif not same_bits(g[s.name], w[s.name]):
                why = f"after run {run}, {s.kind.value} '{s.name}' differs from the reference: {_first_difference(np.asarray(g[s.name]), w[s.name])}"
            else:
                continue
            if pipeline != "O0":
                why += " (O0 agrees with the reference)"
            return Finding(Stage.DIFFERENTIAL, "SEM-1", why, _writer_kinds(graph, s.name), pipeline, choice, order)
    return None


def legal_on_correct_compiler(graph: Graph, order: Sequence[str]) -> bool:
    """Whether the correct compiler accepts ``order`` (an order of ``graph``'s
    nodes, fitted as ``compile_graph`` documents) for ``graph``."""
    prepared = schedulable(graph)
    return _legal(prepared, fit_schedule(graph, prepared, order)) is None


def _run_pipeline(
    graph: Graph,
    prepared: Graph,
    choice: ScheduleChoice,
    pipeline: str,
    mutant: str | None,
    seed: int,
    inputs: Mapping[str, np.ndarray] | None,
    want: Runs,
) -> Finding | None:
    """Compile ``graph`` under ``choice`` and ``pipeline``, check the schedule
    used against the correct model, run twice and compare with the reference.
    ``prepared``: ``schedulable(graph)`` outside the mutant."""
    given = None if choice.order is None else tuple(n for n in choice.order if n in graph.node_by_name)
    illegal = None if given is None else _legal(prepared, fit_schedule(graph, prepared, given))
    where = {"pipeline": pipeline, "schedule": choice}
    try:
        with activate(mutant):
            scheduler = resolve_scheduler(choice.scheduler or "topo")
            compiled = compile_graph(graph, scheduler=scheduler, seed=seed, pipeline=pipeline, schedule=given)
    except InvariantViolation as e:
        if illegal is not None and e.invariant == "SCH-1":
            return None  # an illegal schedule, rightly rejected
        if illegal is not None:
            # the dependency check let it through; a later checker tripped over it
            why = (
                f"the compiler accepts a given schedule that the dependency model forbids ({illegal.detail}); "
                f"it failed later with {e.invariant}: {e.detail}"
            )
            return Finding(Stage.SCHEDULE, "SCH-1", why, _kinds(illegal.names, graph, prepared), **where)  # type: ignore[arg-type]
        return Finding(Stage.COMPILE, e.invariant, e.detail, _violation_kinds(e, graph, prepared), **where)  # type: ignore[arg-type]
    except RefCompilerError as e:
        return Finding(Stage.COMPILE, None, f"{type(e).__name__}: {e}", **where)  # type: ignore[arg-type]
    except Exception as e:
        return _crash(Stage.COMPILE, e, **where)
    order = tuple(compiled.schedule)
    # legality under the correct dependency model, of the graph the compiler
    # actually scheduled: a node graph optimization dropped is the
    # differential's business, not a scheduling fault
    wrong = _legal(compiled.graph, order)
    if wrong is not None:
        who = "accepts a given schedule" if given is not None else "schedules in an order"
        why = f"the compiler {who} that the dependency model forbids: {wrong.detail}"
        # not a permutation: the nodes missing or extra are the ones involved
        involved = wrong.names or tuple(set(order) ^ set(prepared.node_by_name))
        return Finding(Stage.SCHEDULE, "SCH-1", why, _kinds(involved, graph, prepared, compiled.graph), order=order, **where)  # type: ignore[arg-type]
    try:
        with activate(mutant):
            got = (run_compiled(compiled, inputs, runs=1), run_compiled(compiled, inputs, runs=2))
    except InvariantViolation as e:
        return Finding(Stage.EXECUTE, e.invariant, e.detail, _violation_kinds(e, graph, compiled.graph), order=order, **where)  # type: ignore[arg-type]
    except RefCompilerError as e:
        return Finding(Stage.EXECUTE, None, f"{type(e).__name__}: {e}", order=order, **where)  # type: ignore[arg-type]
    except Exception as e:
        return _crash(Stage.EXECUTE, e, order=order, **where)
    return _compare(graph, want, got, pipeline, choice, order)


# ---------------------------------------------------------------------------
# Entry points


def iter_findings(
    graph: Graph,
    choices: Sequence[ScheduleChoice] | Callable[[], Sequence[ScheduleChoice]],
    *,
    pipeline: str = "O2",
    mutant: str | None = None,
    seed: int = 0,
    inputs: Mapping[str, np.ndarray] | None = None,
    expect: Expect = PASS,
    proof: bool = True,
    counter: list[int] | None = None,
    pipelines: Sequence[str] | None = None,
) -> Iterator[Finding]:
    """Every finding of the chain, in order, lazily (a caller that wants only
    the first stops early). ``choices`` may be a function, called inside the
    mutant once the static checks pass. ``counter[0]`` counts the schedules
    run. ``pipelines``: what each schedule is compiled with (default ``O0``
    and ``pipeline``)."""
    if expect.kind is ExpectKind.REJECT:
        assert expect.invariant is not None
        f = check_rejected(graph, expect.invariant, mutant)
        if f is not None:
            yield f
        return
    f = _static(graph, mutant)
    if f is not None:
        yield f
        return
    try:
        want = reference_runs(graph, inputs)
    except RefCompilerError as e:
        yield Finding(Stage.REFERENCE, None, f"the reference cannot run the case: {e}")
        return
    if proof:
        f = _proof(graph, mutant)
        if f is not None:
            yield f
    prepared = schedulable(graph)  # the correct model's graph, outside the mutant
    if callable(choices):
        try:
            with activate(mutant):
                choices = choices()
        except RefCompilerError as e:
            yield Finding(Stage.COMPILE, getattr(e, "invariant", None), f"cannot derive schedules: {e}")
            return
    pipelines = list(dict.fromkeys(["O0", pipeline] if pipelines is None else pipelines))
    seen: set[tuple[str, ...]] = set()
    for choice in choices:
        if choice.order is not None:
            # orders of the prepared graph differing only in where a cycle-breaking
            # copy goes compile alike: the driver places copies itself
            key = tuple(n for n in choice.order if n in graph.node_by_name)
            if key in seen:
                continue
            seen.add(key)
        if counter is not None:
            counter[0] += 1
        for p in pipelines:
            f = _run_pipeline(graph, prepared, choice, p, mutant, seed, inputs, want)
            if f is not None:
                yield f
                break


def check(
    graph: Graph,
    schedule: Sequence[str] | ScheduleChoice | None = None,
    pipeline: str = "O2",
    mutant: str | None = None,
    *,
    scheduler: str = "topo",
    seed: int = 0,
    inputs: Mapping[str, np.ndarray] | None = None,
    expect: Expect = PASS,
    proof: bool = True,
) -> Finding | None:
    """The first finding for one graph under one schedule (``None``: the
    ``scheduler``'s own order), ``O0`` and ``pipeline``, or ``None``."""
    if schedule is None:
        choice = ScheduleChoice(ScheduleSource.SCHEDULER, None, scheduler)
    elif isinstance(schedule, ScheduleChoice):
        choice = schedule
    else:
        choice = ScheduleChoice(ScheduleSource.GIVEN, tuple(schedule))
    findings = iter_findings(
        graph, [choice], pipeline=pipeline, mutant=mutant, seed=seed, inputs=inputs, expect=expect, proof=proof
    )
    return next(findings, None)


def check_case(
    case: Case | Graph,
    *,
    mutant: str | None = None,
    schedulers: Sequence[str] = ("topo",),
    pipeline: str | None = None,
    seed: int = 0,
    randoms: int = 1,
    exhaustive_limit: int = EXHAUSTIVE_LIMIT,
    target: Signature | None = None,
    focus: Finding | None = None,
) -> CaseReport:
    """Check a case under its schedule, or (without one) under the standard set
    (``case_schedules``: each of ``schedulers``, random, adversarial, and every
    legal order of a small graph). Returns the first finding, or with
    ``target`` the first finding with that signature.

    ``focus`` (a finding of a similar case, e.g. while shrinking): check only
    schedules of the source that found it, and only its pipeline, when the
    case offers them; cheaper, and what a shrinker needs."""
    if isinstance(case, Graph):
        case = Case(case)
    graph = case.graph
    if case.schedule is not None:
        choices: Sequence[ScheduleChoice] | Callable[[], Sequence[ScheduleChoice]] = [
            ScheduleChoice(ScheduleSource.GIVEN, case.schedule)
        ]
    else:
        def choices() -> Sequence[ScheduleChoice]:
            found = case_schedules(schedulable(graph), seed=seed, schedulers=schedulers, randoms=randoms, exhaustive_limit=exhaustive_limit)
            return _focused(found, focus)

    counter = [0]
    findings = iter_findings(
        graph,
        choices,
        pipeline=pipeline or case.pipeline,
        mutant=mutant,
        seed=seed,
        inputs=case_inputs(case),
        expect=case.expect,
        counter=counter,
        pipelines=[focus.pipeline] if focus is not None and focus.pipeline is not None else None,
    )
    for f in findings:
        if target is None or f.signature == target:
            return CaseReport(f, counter[0])
    return CaseReport(None, counter[0])


def _focused(choices: Sequence[ScheduleChoice], focus: Finding | None) -> Sequence[ScheduleChoice]:
    """The choices like the one ``focus`` was found under, or all of them."""
    if focus is None or focus.schedule is None:
        return choices
    want = focus.schedule
    if want.source is ScheduleSource.SCHEDULER:
        same = [c for c in choices if c.source is want.source and c.scheduler == want.scheduler]
    else:
        same = [c for c in choices if c.source is want.source]
    return same or choices
