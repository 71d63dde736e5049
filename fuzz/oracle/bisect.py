"""Which pass of a pipeline makes a program's results wrong: for a SEM-1
finding under a pipeline other than ``O0`` (the differential's, on the
case's inputs, or the symbolic stage's, on its confirmed counterexample),
the same order is compiled under ever longer prefixes of the pipeline
(inside the mutant), the empty one first, and run on those inputs; the first
pass after which the values are wrong is the one blamed. It is a function of
the program, so a wrong-result finding gets one signature per pass at fault,
whatever storage or stage showed it.

When every prefix, the whole pipeline included, compiles the order into a
program that runs right, the program that ran wrong was compiled otherwise:
a user's pass that gives another program from one run to the next (it reads
a clock, a random number, the order of a set) is blamed: the only user's pass
of the pipeline, else the first whose prefix compiles to programs that print
differently (``unstable_pass``).

A wrong ``O0`` program, where no pass ran, blames ``dce`` or ``lowering``
(``o0_component``): one lowering bug is then one finding, whichever ops
surround it."""

from __future__ import annotations

from typing import Callable, Mapping, NamedTuple, Sequence

import numpy as np

from refcompiler.driver import Compiled, compile_graph, compile_order, run_compiled_each
from refcompiler.mutants import activate
from refcompiler.ir_text import print_program
from refcompiler.passes import built_in, resolve_pipeline
from refcompiler.values import Values, bind_inputs

from fuzz.oracle.context import RunContext, reference_runs

__all__ = ["Blame", "first_wrong_pass", "unstable_pass", "o0_component"]

# compilations of one prefix that must print alike for its last pass to pass as deterministic
TRIES = 8


class Blame(NamedTuple):
    """The pass blamed (``""``: none) and what to say of it in a finding."""

    name: str = ""
    text: str = ""


def _wrong_from(name: str) -> Blame:
    return Blame(name, f"wrong from pass {name} on") if name else Blame()


def first_wrong_pass(
    ctx: RunContext, wrong: Callable[[Sequence[Values]], bool], inputs: Mapping[str, np.ndarray] | None = None
) -> Blame:
    """The first pass of ``ctx.pipeline`` after which ``ctx.order`` compiled
    and run on ``inputs`` (default: the case's) is ``wrong`` (the stage's own
    test, given the values after each run); else, when no prefix is wrong or
    one fails to compile or run, a user's pass that compiles otherwise each
    time (``unstable_pass``); else ``Blame()`` (the empty prefix, ``O0``, is
    wrong already, or a prefix fails to compile or run every time). A
    scheduler's order is the one it gave (``ctx.order``): it is not asked again."""
    g = ctx.case
    passes = resolve_pipeline(ctx.pipeline)
    recompiled_right = False
    with activate(g.mutant):
        prepared = g.compiler_prepared()

        def compiled_with(k: int) -> Compiled:
            prefix = [p for _, p in passes[:k]]
            if ctx.given is None:  # the order the scheduler gave: it is not asked again
                return compile_order(prepared, ctx.order or (), pipeline=prefix)
            return compile_graph(g.graph, pipeline=prefix, schedule=ctx.given, prepared=prepared)

        for k in range(len(passes) + 1):
            try:
                compiled = compiled_with(k)
                if tuple(compiled.schedule) != ctx.order:
                    return Blame()
                scheduled = compiled.scheduled_graph
                bound = g.bound_inputs(scheduled) if inputs is None else bind_inputs(scheduled, inputs)
                got = run_compiled_each(compiled, runs=2, bound=bound)
            except Exception:  # the finding stands; its blame is unknown, unless a user's pass answers otherwise each time
                break
            if wrong(got):
                return _wrong_from(passes[k - 1][0] if k else "")
        else:
            # the whole pipeline compiled the order into a program that ran right: not the one that ran wrong
            recompiled_right = True
        if built_in(passes):
            return Blame()
        name = unstable_pass(compiled_with, [n for n, _ in passes], [built_in([p]) for p in passes], recompiled_right)
    return Blame(name, f"pass {name} compiles this order into another program from one run to the next") if name else Blame()


def o0_component(
    ctx: RunContext, wrong: Callable[[Sequence[Values]], bool], inputs: Mapping[str, np.ndarray] | None = None
) -> Blame:
    """Whom a wrong ``O0`` program of ``ctx`` blames, no pass having run: ``dce``
    when the reference itself is ``wrong`` on the graph the compiler scheduled
    (graph dead-code elimination or the broken save cycles changed what it
    computes), else ``lowering`` (the order is legal under the correct model,
    SCH-1, and an allocation that overlaps live bytes is refused by MEM-1 or
    the sanitizer before it could run wrong); ``Blame()`` when the reference
    fails to run."""
    if ctx.compiled is None:
        return Blame()
    g, scheduled = ctx.case, ctx.compiled.scheduled_graph
    try:  # outside the mutant, as the reference always runs: only the graph is the compiler's
        bound = g.bound_inputs(scheduled) if inputs is None else bind_inputs(scheduled, inputs)
        if wrong(reference_runs(scheduled, bound)):
            return Blame("dce", "the reference gives these values on the graph the compiler scheduled: dce changed it")
    except Exception:  # the finding stands; its blame is unknown
        return Blame()
    return Blame("lowering", "the reference gets the graph the compiler scheduled right: lowering is wrong")


def unstable_pass(
    compiled_with: Callable[[int], Compiled], names: Sequence[str], trusted: Sequence[bool], recompiled_right: bool = False
) -> str:
    """The first of the passes ``names`` (not ``trusted``: a user's) whose prefix
    of the pipeline, compiled ``TRIES`` times (``compiled_with(k)``: under the
    first ``k`` passes), gives programs that print differently; ``""`` if none.

    ``recompiled_right``: the whole pipeline, compiled again, gave a program
    that ran right where the one compiled first ran wrong, so some user's pass
    answered otherwise, though maybe on fewer than one call in ``TRIES`` (a pass
    wrong on one call in ten looked stable four times in ten): then the only
    user's pass, when there is one, is blamed without asking it again."""
    untrusted = [name for name, known in zip(names, trusted, strict=True) if not known]
    if recompiled_right and len(untrusted) == 1:
        return untrusted[0]
    for k, name in enumerate(names, 1):
        if trusted[k - 1]:
            continue
        seen: set[str] = set()
        for _ in range(TRIES):
            try:
                seen.add(print_program(compiled_with(k).program))
            except Exception as e:  # failing one time and not another is answering otherwise too
                seen.add(f"raised {type(e).__name__}")  # not its message, which may hold an object's address
            if len(seen) > 1:
                return name
    return ""
