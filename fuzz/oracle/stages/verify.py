"""Stage ``verify``: the graph verifier (inside the mutant) accepts a graph
expected to pass, and rejects one expected to be rejected with the expected
id (G-1, OWN-1..4)."""

from __future__ import annotations

from refcompiler.errors import LimitExceeded
from refcompiler.graph import Graph
from refcompiler.mutants import activate
from refcompiler.verifier import violations

from fuzz.case import ExpectKind
from fuzz.oracle.context import GraphContext
from fuzz.oracle.finding import Finding, Location, Stage, crash
from fuzz.oracle.locate import locate
from fuzz.oracle.stage import OracleStage

__all__ = ["STAGE", "check_rejected"]


# the ownership rules are about storage: no op kind tells one such bug from another
STORAGE_RULES = ("OWN-1", "OWN-2", "OWN-3", "OWN-4")


def _locate(invariant: str, names: tuple[str, ...], graph: Graph) -> Location:
    return locate(names, graph, site=() if invariant in STORAGE_RULES else None)


def check_rejected(graph: Graph, invariant: str, mutant: str | None = None) -> Finding | None:
    """A graph that breaks ``invariant`` must be rejected with that id."""
    with activate(mutant):
        found = violations(graph)
    return _rejected(graph, invariant, found)


def _rejected(graph: Graph, invariant: str, found: list) -> Finding | None:
    if any(v.invariant == invariant for v in found):
        return None
    try:
        truth = [v for v in violations(graph) if v.invariant == invariant]
    except Exception:  # the verifier is the code under test: it crashed outside the mutant too
        truth = []
    where = _locate(invariant, truth[0].names, graph) if truth else Location()
    if not found:
        why = f"the verifier accepts a graph that breaks {invariant}"
        if truth:
            why += f" ({truth[0].detail})"
    else:
        why = f"the verifier rejects with {found[0].invariant} ({found[0].detail}), not {invariant}"
    return Finding(Stage.VERIFY, invariant, why, where)


def check(ctx: GraphContext) -> Finding | None:
    try:
        found = ctx.violations
    except LimitExceeded:  # a graph beyond the resource limits is no case to check, not a fault of the verifier
        raise
    except Exception as e:  # a crash in the verifier is a finding, not an abort (on an invalid graph too)
        return crash(Stage.VERIFY, e)
    if ctx.expect.kind is ExpectKind.REJECT:
        assert ctx.expect.invariant is not None
        return _rejected(ctx.graph, ctx.expect.invariant, found)
    if not found:
        return None
    v = found[0]
    why = f"the verifier rejects a graph expected to pass: {v.detail}"
    return Finding(Stage.VERIFY, v.invariant, why, _locate(v.invariant, v.names, ctx.graph))


STAGE = OracleStage(Stage.VERIFY, ("G-1", "OWN-1", "OWN-2", "OWN-3", "OWN-4"), check, on_reject=True)
