"""Which pass of a pipeline makes a program's results wrong: for a SEM-1
finding under a pipeline whose schedule ``O0`` gets right, the same order is
compiled under ever longer prefixes of the pipeline (inside the mutant) and
run, and the first pass after which the values differ from the reference is
the one blamed. It is a function of the program, so a wrong-result finding
gets one signature per pass at fault, whatever storage showed it."""

from __future__ import annotations

from typing import Callable, Sequence

from refcompiler.driver import compile_graph, run_compiled_each
from refcompiler.mutants import activate
from refcompiler.passes import resolve_pipeline
from refcompiler.schedulers import resolve_scheduler
from refcompiler.values import Values

from fuzz.oracle.context import RunContext

__all__ = ["first_wrong_pass"]


def first_wrong_pass(ctx: RunContext, wrong: Callable[[Sequence[Values]], bool]) -> str:
    """The name of the first pass of ``ctx.pipeline`` after which ``ctx.order``
    compiled and run is ``wrong`` (the differential's own test, given the
    values after each run), or ``""`` when no prefix
    does so alone (a prefix that fails to compile or run, or a scheduler that
    gives another order when asked again: nothing is blamed then)."""
    g = ctx.case
    passes = resolve_pipeline(ctx.pipeline)
    with activate(g.mutant):
        prepared = g.compiler_prepared()
        scheduler = resolve_scheduler(ctx.choice.scheduler or "topo")
        seed = g.seed if ctx.choice.seed is None else ctx.choice.seed
        for k in range(1, len(passes) + 1):
            try:
                compiled = compile_graph(g.graph, scheduler=scheduler, seed=seed, pipeline=[p for _, p in passes[:k]],
                                         schedule=ctx.given, prepared=prepared)
                if tuple(compiled.schedule) != ctx.order:
                    return ""
                got = run_compiled_each(compiled, g.inputs, runs=2, bound=g.bound_inputs(compiled.scheduled_graph))
            except Exception:  # the finding stands; only its blame is unknown
                return ""
            if wrong(got):
                return passes[k - 1][0]
    return ""
