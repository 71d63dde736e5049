"""Which pass of a pipeline makes a program's results wrong: for a SEM-1
finding under a pipeline other than ``O0`` (the differential's, on the
case's inputs, or the symbolic stage's, on its confirmed counterexample),
the same order is compiled under ever longer prefixes of the pipeline
(inside the mutant), the empty one first, and run on those inputs; the first
pass after which the values are wrong is the one blamed. It is a function of
the program, so a wrong-result finding gets one signature per pass at fault,
whatever storage or stage showed it."""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from refcompiler.driver import compile_graph, compile_order, run_compiled_each
from refcompiler.mutants import activate
from refcompiler.passes import resolve_pipeline
from refcompiler.values import Values, bind_inputs

from fuzz.oracle.context import RunContext

__all__ = ["first_wrong_pass"]


def first_wrong_pass(
    ctx: RunContext, wrong: Callable[[Sequence[Values]], bool], inputs: Mapping[str, np.ndarray] | None = None
) -> str:
    """The name of the first pass of ``ctx.pipeline`` after which ``ctx.order``
    compiled and run on ``inputs`` (default: the case's) is ``wrong`` (the
    stage's own test, given the values after each run), or ``""`` when no
    prefix does so alone: the empty prefix (``O0``) is wrong already, a
    prefix fails to compile or run; nothing is blamed then. A scheduler's
    order is the one it gave (``ctx.order``): it is not asked again."""
    g = ctx.case
    passes = resolve_pipeline(ctx.pipeline)
    with activate(g.mutant):
        prepared = g.compiler_prepared()
        for k in range(len(passes) + 1):
            prefix = [p for _, p in passes[:k]]
            try:
                if ctx.given is None:  # the order the scheduler gave: it is not asked again
                    compiled = compile_order(prepared, ctx.order or (), pipeline=prefix)
                else:
                    compiled = compile_graph(g.graph, pipeline=prefix, schedule=ctx.given, prepared=prepared)
                if tuple(compiled.schedule) != ctx.order:
                    return ""
                scheduled = compiled.scheduled_graph
                bound = g.bound_inputs(scheduled) if inputs is None else bind_inputs(scheduled, inputs)
                got = run_compiled_each(compiled, runs=2, bound=bound)
            except Exception:  # the finding stands; only its blame is unknown
                return ""
            if wrong(got):
                return passes[k - 1][0] if k else ""
    return ""
