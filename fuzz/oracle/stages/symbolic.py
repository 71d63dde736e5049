"""Stage ``symbolic``: symbolic translation validation (DESIGN §7.4). The
compiled program and the reference run on symbols, and their final
placeholders and owned state must be equal for *all* input values, after one
run and after two (SEM-1), not only for the case's own values, which is all
the differential stage sees.

Only a confirmed counterexample is a finding: a Z3 model made concrete input
values on which the concrete interpreter and the reference differ. A Z3
``unknown``, a timeout or an unconfirmed difference is inconclusive, and
kept (``GraphContext.symbolic_inconclusive``: the pipeline, schedule and
order, and the validator's reason, for a campaign to report), never a finding
and never proved.

It runs when the graph context says so (``GraphContext.symbolic``: on, off,
or by default on for graphs ``small_enough``), once per distinct compiled
program of a graph (programs equal up to renaming share one validation;
``canonical_key``, the canonical text's equality without printing).
A counterexample under the pipeline is bisected on its own values
(``bisect``), as the differential's difference is.
The symbolic reference is the oracle: it is computed once per graph, outside
the mutant; the program is validated inside it, as it is executed.
"""

from __future__ import annotations

from typing import Sequence

from refcompiler.errors import UsageError
from refcompiler.mutants import activate
from refcompiler.proofs import Verdict
from refcompiler.symbolic.schedules import canonical_key
from refcompiler.symbolic.validate import validate_compiled
from refcompiler.values import Values

from fuzz.oracle.bisect import Blame, first_wrong_pass, o0_component
from fuzz.oracle.context import RunContext, reference_runs
from fuzz.oracle.finding import Finding, Location, Stage, Unsettled
from fuzz.oracle.locate import locate_writers
from fuzz.oracle.stage import OracleStage
from fuzz.oracle.stages.differential import first_wrong

__all__ = ["STAGE", "TIMEOUT"]

# Seconds Z3 may take per validation; past it the verdict is inconclusive.
TIMEOUT = 2.0


def check(ctx: RunContext) -> Finding | None:
    g = ctx.case
    if ctx.compiled is None or ctx.got is None or not g.symbolic_enabled:
        return None  # nothing ran, or the stage is off for this graph
    key = ctx.key if ctx.key is not None else canonical_key(ctx.compiled.program)  # equal keys: equal canonical text
    if key in g.symbolic_seen or key in g.symbolic_unknown:
        return None  # this program was validated already (in this case, when Z3 gave no answer), with no counterexample
    try:
        reference = g.symbolic_reference  # outside the mutant: the oracle
        with activate(g.mutant):
            v = validate_compiled(g.graph, ctx.compiled, runs=2, timeout=TIMEOUT, reference=reference)
    except UsageError as e:  # the term bound (DESIGN §12): too large to validate, not a finding
        g.symbolic_seen.add(key)
        g.symbolic_inconclusive.append(Unsettled(ctx.pipeline, ctx.choice, ctx.order, str(e)))
        return None
    if v.verdict is Verdict.INCONCLUSIVE:
        first = v.differences[0] if v.differences else None
        g.symbolic_inconclusive.append(Unsettled(ctx.pipeline, ctx.choice, ctx.order, v.detail, first))
    if v.verdict is not Verdict.COUNTEREXAMPLE:
        # a verdict of the program alone is carried to later cases (``GraphContext.carried``); Z3's silence is not
        (g.symbolic_unknown if v.unknown else g.symbolic_seen).add(key)
        return None
    storage = _first_storage(v.differences)
    where = locate_writers(g.graph, storage) if storage else Location()
    why = f"symbolic validation finds input values on which the compiled program departs from the reference: {v.detail}"
    blame = _blame(ctx, v.inputs)
    if blame.name and ctx.pipeline == "O0":
        why += f" ({blame.text})"
    elif blame.name:
        why += f" (on those values O0 agrees with the reference; {blame.text})"
    return Finding(Stage.SYMBOLIC, "SEM-1", why, where, order=ctx.order, blame=blame.name, **ctx.where)  # type: ignore[arg-type]


def _blame(ctx: RunContext, inputs: Values | None) -> Blame:
    """The pass the counterexample ``inputs`` show wrong first (``bisect``),
    or under ``O0`` the component (``o0_component``), so that one bug signs
    one finding whichever stage saw it."""
    if not inputs:
        return Blame()
    graph = ctx.case.graph
    want = reference_runs(graph, inputs)

    def is_wrong(got: Sequence[Values]) -> bool:
        return first_wrong(graph, got, want) is not None

    if ctx.pipeline == "O0":
        return o0_component(ctx, is_wrong, inputs)
    return first_wrong_pass(ctx, is_wrong, inputs)


def _first_storage(differences: tuple[str, ...]) -> str | None:
    """The storage of the first difference (``"run 1: p[3]"`` -> ``p``)."""
    if not differences:
        return None
    text = differences[0].split(": ", 1)[-1]
    return text.split("[", 1)[0] or None


STAGE = OracleStage(Stage.SYMBOLIC, ("SEM-1",), check, per_schedule=True)
