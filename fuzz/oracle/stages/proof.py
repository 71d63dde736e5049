"""Stage ``proof``: SCH-2 by reachability (``refcompiler.proofs.prove``,
inside the mutant): every pair of conflicting nodes is ordered by the
dependency model. Not fatal: the schedules are still checked."""

from __future__ import annotations

from refcompiler.errors import InvariantViolation
from refcompiler.mutants import activate
from refcompiler.proofs import Verdict, prove

from fuzz.oracle.context import GraphContext
from fuzz.oracle.finding import Finding, Stage, crash
from fuzz.oracle.locate import locate_conflict, locate_violation
from fuzz.oracle.stage import OracleStage

__all__ = ["STAGE"]


def check(ctx: GraphContext) -> Finding | None:
    if not ctx.proof:
        return None
    try:
        with activate(ctx.mutant):
            proof = prove(ctx.graph, engine="reach")
    except InvariantViolation as e:
        return Finding(Stage.PROOF, e.invariant, e.detail, locate_violation(e, ctx.graph))
    except Exception as e:
        return crash(Stage.PROOF, e)
    if proof.verdict is not Verdict.COUNTEREXAMPLE:
        return None
    cx = proof.counterexample
    a, b = cx.nodes
    s1, s2 = cx.schedules
    why = (
        f"'{a}' and '{b}' both touch '{cx.storage}' (at least one writes) but the dependency model does not "
        f"order them: legal orders {', '.join(s1)} and {', '.join(s2)} disagree"
    )
    return Finding(Stage.PROOF, "SCH-2", why, locate_conflict(ctx.graph, (a, b), cx.storage), order=tuple(s2))


STAGE = OracleStage(Stage.PROOF, ("SCH-2",), check, fatal=False)
