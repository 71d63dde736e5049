"""The oracle's entry points: ``check`` (one graph, one schedule),
``check_case`` (a case under its schedule or the standard set) and
``legal_on_correct_compiler``."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from refcompiler.driver import scheduled_model
from refcompiler.graph import Graph
from refcompiler.mutants import get as get_mutant
from refcompiler.passes import resolve_pipeline
from refcompiler.schedulers import resolve_scheduler

from fuzz.case import PASS, Case, Expect, case_inputs
from fuzz.oracle.chain import CHAIN, Choices, iter_findings, target_chain
from fuzz.oracle.context import Carry, GraphContext
from fuzz.oracle.finding import Bug, CaseReport, Finding, Signature
from fuzz.schedules import EXHAUSTIVE_LIMIT, ScheduleChoice, ScheduleSource, case_schedules

__all__ = ["check", "check_case", "legal_on_correct_compiler"]


def _pipelines(pipeline: str, only: str | None = None) -> list[str]:
    """What each schedule is compiled with: ``O0`` and ``pipeline``, or ``only``."""
    return [only] if only is not None else list(dict.fromkeys(["O0", pipeline]))


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
    symbolic: bool | None = None,
) -> Finding | None:
    """The first finding for one graph under one schedule (``None``: the
    ``scheduler``'s own order), ``O0`` and ``pipeline``, or ``None``.
    ``UsageError`` for a ``pipeline``, ``scheduler`` or ``mutant`` that names
    nothing (an unknown pass, a module that does not import): the caller's
    mistake, not a finding about the compiler. They are resolved outside
    ``mutant``, so a mutant's own errors while compiling stay findings.
    ``LimitExceeded`` for a graph beyond the resource limits (``REFC_MAX_*``),
    as loading it from a file would say."""
    resolve_pipeline(pipeline)
    if mutant is not None:
        get_mutant(mutant)
    if schedule is None:
        resolve_scheduler(scheduler)
        choice = ScheduleChoice(ScheduleSource.SCHEDULER, None, scheduler)
    elif isinstance(schedule, ScheduleChoice):
        choice = schedule
    else:
        choice = ScheduleChoice(ScheduleSource.GIVEN, tuple(schedule))
    ctx = GraphContext(graph, expect, mutant, seed, inputs, proof, symbolic)
    return next(iter_findings(ctx, [choice], _pipelines(pipeline)), None)


def check_case(
    case: Case | Graph,
    *,
    mutant: str | None = None,
    schedulers: Sequence[str] = ("topo",),
    pipeline: str | None = None,
    seed: int = 0,
    randoms: int = 1,
    exhaustive_limit: int = EXHAUSTIVE_LIMIT,
    target: Signature | Bug | None = None,
    focus: Finding | None = None,
    symbolic: bool | None = None,
    compiler: str | None = None,
    isolate: bool = True,
    carry: Carry | None = None,
) -> CaseReport:
    """Check a case under its schedule, or its recorded scheduler called with
    its recorded seed, or (without either) under the standard set
    (``case_schedules``: each of ``schedulers``, random, adversarial, and every
    legal order of a small graph). Returns the first finding, or with
    ``target`` the first finding with that signature (a ``Bug``: that
    signature but for the op kinds).

    ``focus`` (a finding of a similar case, e.g. while shrinking): check only
    schedules of the source that found it, and only its pipeline, when the
    case offers them; cheaper, and what a shrinker needs. ``symbolic``: the
    symbolic stage on, off, or (``None``) on for graphs small enough.
    ``compiler``: an external target (``refcompiler.targets``) to check
    instead of refc's own compiler (``chain.target_chain``; ``isolate``: in a
    child process). ``carry`` (a campaign's): for refc's own compiler, start
    from what an earlier case of the same graph object left (``Carry``), and
    leave this one's if it finds nothing."""
    if isinstance(case, Graph):
        case = Case(case)
    graph = case.graph
    if compiler is None and case.target is not None:  # a target's case: that target again
        compiler = case.target.spec
    inputs, carry = case_inputs(case), carry if compiler is None else None
    if carry is not None:
        ctx = carry.context(graph, case.expect, mutant, seed, symbolic, inputs)
    else:
        ctx = GraphContext(graph, case.expect, mutant, seed, inputs, symbolic=symbolic)
    if case.schedule is not None:
        choices: Choices = [ScheduleChoice(ScheduleSource.GIVEN, case.schedule)]
    elif case.scheduler is not None:  # recorded: that scheduler, called with that seed
        choices = [ScheduleChoice(ScheduleSource.SCHEDULER, None, case.scheduler, case.scheduler_seed)]
    else:
        def choices() -> Sequence[ScheduleChoice]:
            # called inside the mutant; without one, the compiler's scheduled graph and its
            # model are the correct ones, which the context has made already (``prepared``)
            scheduled, deps = (ctx.prepared, ctx.deps) if mutant is None else scheduled_model(graph)
            found = case_schedules(scheduled, seed=seed, schedulers=schedulers, randoms=randoms,
                                   exhaustive_limit=exhaustive_limit, deps=deps)
            return _focused(found, focus)

    pipelines = _pipelines(pipeline or case.pipeline, focus.pipeline if focus is not None else None)
    chain = CHAIN if compiler is None else _target_chain(compiler, isolate)
    clean = True
    for f in iter_findings(ctx, choices, pipelines, chain):
        clean = False
        if target is None or f.signature.matches(target):
            return CaseReport(f, ctx.schedules, ctx.target_refused, ctx.seconds, ctx.scheduler_orders, tuple(ctx.symbolic_inconclusive))
    if carry is not None and clean:
        carry.keep(ctx)
    return CaseReport(None, ctx.schedules, ctx.target_refused, ctx.seconds, ctx.scheduler_orders, tuple(ctx.symbolic_inconclusive))


def _focused(choices: Sequence[ScheduleChoice], focus: Finding | None) -> Sequence[ScheduleChoice]:
    """The choices like the one ``focus`` was found under, or all of them."""
    if focus is None or focus.schedule is None:
        return choices
    want = focus.schedule
    if want.source is ScheduleSource.SCHEDULER:
        same = [c for c in choices if c.source is want.source and c.scheduler == want.scheduler]
        same.sort(key=lambda c: c.seed != want.seed)  # the seed that found it first
    else:
        same = [c for c in choices if c.source is want.source]
    return same or choices


def legal_on_correct_compiler(graph: Graph, order: Sequence[str]) -> bool:
    """Whether the correct compiler accepts ``order`` (an order of ``graph``'s
    nodes, fitted as ``compile_graph`` documents) for ``graph``."""
    return GraphContext(graph).illegal_given(order) is None


_CHAINS: dict[tuple[str, bool], tuple] = {}


def _target_chain(spec: str, isolate: bool) -> tuple:
    """``target_chain``, built once per target (resolving imports its package)."""
    if (spec, isolate) not in _CHAINS:
        _CHAINS[(spec, isolate)] = target_chain(spec, isolate=isolate)
    return _CHAINS[(spec, isolate)]
