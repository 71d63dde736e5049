"""The oracle chain: ``CHAIN``, the stages in order, and the loop that runs
them (``iter_findings``). Adding a stage is a module in ``fuzz/oracle/stages``
and one entry here."""

from __future__ import annotations

import time
from typing import Callable, Generator, Iterator, Sequence

from refcompiler.errors import RefCompilerError
from refcompiler.mutants import activate
from refcompiler.plugins import seconds_in_plugins

from fuzz.case import ExpectKind
from fuzz.oracle.context import GraphContext, RunContext, SchedulerAnswer
from fuzz.oracle.finding import Finding, Stage
from fuzz.oracle.stage import OracleStage
from fuzz.oracle.stages import compile_run, differential, proof, reference, symbolic, target, verify
from fuzz.schedules import ScheduleChoice
from fuzz.time_limit import CaseTimeout

__all__ = ["CHAIN", "Choices", "SCHEDULES", "iter_findings", "target_chain"]

CHAIN: tuple[OracleStage, ...] = (
    verify.STAGE,
    reference.STAGE,
    proof.STAGE,
    compile_run.STAGE,
    differential.STAGE,
    symbolic.STAGE,
)


def target_chain(spec: str, *, isolate: bool = True) -> tuple[OracleStage, ...]:
    """The chain for an external compiler (``refcompiler.targets``, by name or
    ``module:attr``): the graph verified, the reference run, then the target
    stage; refc's own compiler is not run. ``UsageError`` for an unknown target
    or one whose package is missing (the pip command)."""
    from refcompiler.targets import resolve_target

    return (verify.STAGE, reference.STAGE, target.stage_for(spec, resolve_target(spec), isolate=isolate))


Choices = Sequence[ScheduleChoice] | Callable[[], Sequence[ScheduleChoice]]

# ``GraphContext.seconds``' key for deriving a graph's schedules (each stage's is its name)
SCHEDULES = "schedules"
# its key for the time in a user's scheduler and passes, taken out of the stage they ran in
PLUGINS = "plug-ins"


def _timed(ctx: GraphContext, stage: OracleStage, on: GraphContext | RunContext) -> Finding | None:
    start, spent = time.perf_counter(), seconds_in_plugins()
    try:
        return stage.check(on)
    finally:
        _add_time(ctx, stage.name.value, start, spent)


def _add_time(ctx: GraphContext, key: str, start: float, spent: float) -> None:
    """Add the seconds since ``start`` to ``key``, less those users' code took
    since ``seconds_in_plugins()`` was ``spent``, which go to ``PLUGINS``."""
    theirs = seconds_in_plugins() - spent
    ctx.seconds[key] += time.perf_counter() - start - theirs
    if theirs:
        ctx.seconds[PLUGINS] += theirs


def _applies(stage: OracleStage, ctx: GraphContext) -> bool:
    return stage.on_reject or ctx.expect.kind is not ExpectKind.REJECT


def iter_findings(
    ctx: GraphContext, choices: Choices, pipelines: Sequence[str], chain: Sequence[OracleStage] = CHAIN
) -> Iterator[Finding]:
    """Every finding of ``chain`` for ``ctx``, in order, lazily (a caller that
    wants only the first stops early): the per-graph stages once (those
    that passed, ``ctx.settled``, not again), then the per-schedule
    stages for each of ``choices`` under ``pipelines``: the first choice
    under each of them, a later one under the last (the pipeline under test)
    and, when that finds something there, under the others (``O0``) before it
    (``_run_later``): what depends on the graph alone is checked once.
    ``choices`` may be a function, called inside the mutant once the
    per-graph stages pass. ``ctx.schedules`` counts the distinct orders
    checked (``_run_schedule``); ``ctx.seconds`` adds up the time each stage
    took, and deriving the schedules (``SCHEDULES``)."""
    for stage in (s for s in chain if not s.per_schedule and _applies(s, ctx) and s not in ctx.settled):
        f = _timed(ctx, stage, ctx)
        if f is None:
            ctx.settled.add(stage)
        else:
            yield f
            if stage.fatal:
                return
    stages = [s for s in chain if s.per_schedule and _applies(s, ctx)]
    if not stages:
        return
    start, spent, failed = time.perf_counter(), seconds_in_plugins(), None
    _ = ctx.prepared  # the correct model's graph: made here, outside the mutant, before any schedule
    if callable(choices):
        try:
            with activate(ctx.mutant):
                choices = choices()
        except RefCompilerError as e:
            failed = e
    _add_time(ctx, SCHEDULES, start, spent)
    if failed is not None:
        yield Finding(Stage.COMPILE, getattr(failed, "invariant", None), f"cannot derive schedules: {failed}")
        return
    beside, tested = list(pipelines[:-1]), list(pipelines[-1:])
    for n, choice in enumerate(_distinct(ctx, choices)):  # type: ignore[arg-type]  # called above when callable
        if n == 0 or not beside:
            yield from _run_schedule(ctx, choice, pipelines, stages, SchedulerAnswer())
        else:
            yield from _run_later(ctx, choice, beside, tested, stages)


def _run_later(ctx: GraphContext, choice: ScheduleChoice, beside: Sequence[str], tested: Sequence[str], stages: Sequence[OracleStage]) -> Iterator[Finding]:
    """A schedule after the graph's first: the pipelines ``beside`` the one
    under test (``O0``) are checked under the first schedule only, and under
    this one when the pipeline under test finds something here; then before
    its findings, so that the findings come in the order they would if
    ``beside`` ran first (a fault both show is found under ``O0``, and a
    finding under the pipeline may say that ``O0`` agrees)."""
    answer = SchedulerAnswer()
    found = _run_schedule(ctx, choice, tested, stages, answer)
    first = next(found, None)
    if first is None:
        return
    if (yield from _run_schedule(ctx, choice, beside, stages, answer)):
        return  # a fatal finding under ``beside``: the chain stops there
    yield first
    yield from found


def _distinct(ctx: GraphContext, choices: Sequence[ScheduleChoice]) -> Iterator[ScheduleChoice]:
    """``choices`` without repeated explicit orders: orders of the prepared
    graph differing only in where a cycle-breaking copy goes compile alike
    (the driver places copies itself)."""
    seen: set[tuple[str, ...]] = set()
    for choice in choices:
        if choice.order is not None:
            key = tuple(n for n in choice.order if n in ctx.graph.node_by_name)
            if key in seen:
                continue
            seen.add(key)
        yield choice


def _run_schedule(
    ctx: GraphContext, choice: ScheduleChoice, pipelines: Sequence[str], stages: Sequence[OracleStage], answer: SchedulerAnswer
) -> Generator[Finding, None, bool]:
    """The per-schedule ``stages`` for ``choice`` under each of ``pipelines``;
    ``answer``: the scheduler's, asked once for all the pipelines the choice
    is checked under. Returns whether a fatal finding stopped it."""
    given = None if choice.order is None else tuple(n for n in choice.order if n in ctx.graph.node_by_name)
    counted = False
    for pipeline in pipelines:
        run = RunContext(ctx, choice, pipeline, given, answer=answer)
        clean = True
        for stage in stages:
            try:
                f = _timed(ctx, stage, run)
            except CaseTimeout as e:  # the campaign's limit: it says which schedule it struck
                e.schedule, e.pipeline = choice, pipeline
                raise
            if not counted:  # after the first stage, which compiles: the order is known
                counted = True
                _count(ctx, run.order if run.order is not None else given)
            if f is not None:
                clean = False
                yield f
                if stage.fatal:
                    return True
        if clean and run.got is not None and run.compiled is not None and run.key is not None:
            ctx.remember_passed(run.compiled, pipeline, run.key)
    return False


def _count(ctx: GraphContext, order: tuple[str, ...] | None) -> None:
    """Count a schedule unless its order was checked for this graph already
    (a scheduler's order that another choice gave too: its program is the
    one that passed, not checked again) or orders no node (a graph that is
    all dead code: its empty program is checked, but there was nothing to
    schedule). ``None`` (nothing compiled: it is not known which order it
    was) counts."""
    if order is not None:
        if order in ctx.orders_checked or not order:
            return
        ctx.orders_checked.add(order)
    ctx.schedules += 1
