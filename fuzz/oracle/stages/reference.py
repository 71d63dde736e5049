"""Stage ``reference``: the reference interpreter runs the case twice (outside
the mutant); what it computes is what the differential stage compares with."""

from __future__ import annotations

from refcompiler.errors import RefCompilerError

from fuzz.oracle.context import GraphContext
from fuzz.oracle.finding import Finding, Stage
from fuzz.oracle.stage import OracleStage

__all__ = ["STAGE"]


def check(ctx: GraphContext) -> Finding | None:
    try:
        ctx.reference
    except RefCompilerError as e:
        return Finding(Stage.REFERENCE, None, f"the reference cannot run the case: {e}")
    return None


STAGE = OracleStage(Stage.REFERENCE, (), check, reads_inputs=True)
