"""Stage ``compile``: compile one schedule under one pipeline (inside the
mutant; the driver verifies the IR after lowering and after every pass),
check the order the compiler used against the *correct* dependency model
(SCH-1; an explicit order that is illegal must be rejected), and run the
program twice under the sanitizer. Findings are made at ``compile``,
``schedule`` or ``execute``; the values run leave ``ctx.got`` for the
differential stage.

A compiled program equal to one that already passed every per-schedule stage
for the graph (``GraphContext.passed``: a scheduler's order that is also one
of the explicit ones, or a pipeline whose passes changed nothing under an
order ``O0`` passed with) is not checked or run again: the checks after
compilation are functions of the program (its order included) and of the
graph's inputs, so they would give what they gave (``ctx.got`` stays ``None``).
Nor is one that differs from such a program only in the names of its values
(``canonical_key``; another order that compiled alike): its order is checked
(SCH-1), but it would run, and be compared, as that program did.
A scheduler is asked for its order once per choice, whatever the pipelines,
and an order a pipeline compiled and passed with is not compiled again under
it (``GraphContext.passed_compiled``)."""

from __future__ import annotations

from refcompiler.driver import compile_graph, compile_order, run_compiled_each, scheduler_order
from refcompiler.errors import ExecutionError, InvariantViolation, RefCompilerError
from refcompiler.graph import Graph
from refcompiler.mutants import activate
from refcompiler.schedulers import blamed_as, resolve_scheduler
from refcompiler.symbolic.schedules import canonical_key

from fuzz.oracle.context import RunContext
from fuzz.oracle.finding import Finding, Stage, crash
from fuzz.oracle.locate import blame_of, locate, locate_edge, locate_violation
from fuzz.oracle.stage import OracleStage

__all__ = ["STAGE"]

INVARIANTS = ("SCH-1", "IR-1", "IR-2", "IR-3", "IR-4", "IR-5", "IR-6", "MEM-1")


def check(ctx: RunContext) -> Finding | None:
    found = _compile(ctx)
    if found is not None or ctx.order is None:
        return found
    program = ctx.compiled.program  # type: ignore[union-attr]  # set with the order
    if ctx.case.passed(program):
        return None
    found = _scheduled_legally(ctx)
    if found is not None:
        return found
    ctx.key = canonical_key(program)
    if ctx.case.passed_alike(ctx.key):
        return None  # it would run as the program that passed ran
    return _execute(ctx)


def _compile(ctx: RunContext) -> Finding | None:
    """Compile; sets ``ctx.compiled`` unless it fails. A given order that the
    correct model forbids must fail with SCH-1. A scheduler's order that this
    pipeline compiled and passed with already (``GraphContext.passed_compiled``:
    another choice gave it too) is not compiled again: its program would be
    equal, and is found passed (``check``)."""
    g = ctx.case
    illegal = None if ctx.given is None else g.illegal_given(ctx.given)
    try:
        with activate(g.mutant):
            if ctx.given is None:
                order = _scheduler_answer(ctx)
                passed = g.passed_compiled(order, ctx.pipeline)
                ctx.compiled = passed or compile_order(g.compiler_prepared(), order, pipeline=ctx.pipeline)
            else:
                resolve_scheduler(ctx.choice.scheduler or "topo")  # an unknown name fails as compile_graph's would
                prepared = g.compiler_prepared()  # verified, scheduled graph, deps: once per graph
                ctx.compiled = compile_graph(g.graph, pipeline=ctx.pipeline, schedule=ctx.given, prepared=prepared)
    except InvariantViolation as e:
        if illegal is not None and e.invariant == "SCH-1":
            return None  # an illegal schedule, rightly rejected
        if illegal is not None:
            # the dependency check let it through; a later checker tripped over it
            why = (
                f"the compiler accepts a given schedule that the dependency model forbids ({illegal.detail}); "
                f"it failed later with {e.invariant}: {e.detail}"
            )
            where = locate_edge(illegal.names, g.graph, g.prepared)
            return Finding(Stage.SCHEDULE, "SCH-1", why, where, blame="scheduler", **ctx.where)  # type: ignore[arg-type]
        wrong = _illegal_answer(ctx) if e.invariant != "SCH-1" else None
        if wrong is not None:  # lowering tripped over an order the dependency model should have forbidden
            return wrong
        where = locate_violation(e, g.graph, g.prepared)
        # a scheduler's order the driver rejects is kept with the finding (as data:
        # a stored case carries it, and ``refc show`` draws its broken edges)
        order = ctx.answer.order if ctx.given is None and e.invariant == "SCH-1" else None
        blame = _scheduler_blame(ctx) if e.invariant == "SCH-1" else blame_of(e)
        return Finding(Stage.COMPILE, e.invariant, e.detail, where, blame=blame, order=order, **ctx.where)  # type: ignore[arg-type]
    except RefCompilerError as e:
        # a user's pass or scheduler that raised (or returned no program) is blamed by name, as its violations are
        blame = e.component if isinstance(e, ExecutionError) else ""
        return Finding(Stage.COMPILE, None, f"{type(e).__name__}: {e}", blame=blame, **ctx.where)  # type: ignore[arg-type]
    except Exception as e:
        return crash(Stage.COMPILE, e, **ctx.where)
    ctx.order = tuple(ctx.compiled.schedule)
    return None


def _scheduler_answer(ctx: RunContext) -> tuple[str, ...]:
    """The order the choice's scheduler gives (``scheduler_order``), asked on
    the first call for the choice (``ctx.answer``, shared by its pipelines):
    a user's scheduler is called once per choice. Raises what asking raised,
    on every call."""
    answer = ctx.answer
    if answer.order is None and answer.error is None:
        try:
            scheduler = resolve_scheduler(ctx.choice.scheduler or "topo")
            seed = ctx.case.seed if ctx.choice.seed is None else ctx.choice.seed
            answer.order = scheduler_order(ctx.case.compiler_prepared(), scheduler, seed)
            ctx.case.scheduler_orders[(ctx.choice.scheduler or "topo", seed)] = answer.order
        except Exception as e:  # kept: each pipeline reports it, as compiling would
            answer.error = e
    if answer.error is not None:
        raise answer.error
    return answer.order  # type: ignore[return-value]  # set above


def _illegal_answer(ctx: RunContext) -> Finding | None:
    """A scheduler's order whose compilation failed, if it is illegal under the
    correct model (a missing dependency edge shows as IR-1 or IR-4 in lowering's
    program): that finding, which blames the scheduler, not lowering."""
    if ctx.given is not None or ctx.answer.order is None:
        return None
    try:
        scheduled = ctx.case.compiler_prepared().scheduled
    except Exception:
        return None
    return _forbidden(ctx, scheduled, ctx.answer.order)


def _scheduled_legally(ctx: RunContext) -> Finding | None:
    """The order compiled is legal under the correct model, for the graph the
    compiler actually scheduled: a node graph optimization dropped is the
    differential's business, not a scheduling fault."""
    if ctx.compiled is None or ctx.order is None:
        return None
    return _forbidden(ctx, ctx.compiled.scheduled_graph, ctx.order)


def _forbidden(ctx: RunContext, scheduled: Graph, order: tuple[str, ...]) -> Finding | None:
    """SCH-1 if ``order`` of ``scheduled`` (what the compiler scheduled) is illegal under the correct model."""
    g = ctx.case
    wrong = g.illegal(scheduled, order)
    if wrong is None:
        return None
    who = "accepts a given schedule" if ctx.given is not None else "schedules in an order"
    why = f"the compiler {who} that the dependency model forbids: {wrong.detail}"
    # not a permutation: the nodes missing or extra are the ones involved
    involved = wrong.names or tuple(sorted(set(order) ^ set(g.prepared.node_by_name)))
    where = locate(involved, g.graph, g.prepared, scheduled, site=wrong.names[-1:])
    return Finding(Stage.SCHEDULE, "SCH-1", why, where, order=order, blame=_scheduler_blame(ctx), **ctx.where)  # type: ignore[arg-type]


def _scheduler_blame(ctx: RunContext) -> str:
    """Whom an illegal order blames: the choice's scheduler that gave it, a
    user's by its name (``blamed_as``); a given order, ``scheduler``: refc's
    own dependency check, which let it through."""
    return blamed_as(ctx.choice.scheduler or "topo") if ctx.given is None else "scheduler"


def _execute(ctx: RunContext) -> Finding | None:
    """Run twice under the sanitizer; sets ``ctx.got``."""
    if ctx.compiled is None:
        return None
    g, compiled, at = ctx.case, ctx.compiled, {"order": ctx.order, **ctx.where}
    try:
        with activate(g.mutant):
            bound = g.bound_inputs(compiled.scheduled_graph)
            first, second = run_compiled_each(compiled, g.inputs, runs=2, bound=bound)  # = runs=1 and runs=2, in two runs
            ctx.got = (first, second)
    except InvariantViolation as e:
        where = locate_violation(e, g.graph, compiled.scheduled_graph)
        return Finding(Stage.EXECUTE, e.invariant, e.detail, where, blame=blame_of(e), **at)  # type: ignore[arg-type]
    except RefCompilerError as e:
        return Finding(Stage.EXECUTE, None, f"{type(e).__name__}: {e}", **at)  # type: ignore[arg-type]
    except Exception as e:
        return crash(Stage.EXECUTE, e, **at)
    return None


STAGE = OracleStage(Stage.COMPILE, INVARIANTS, check, per_schedule=True)
