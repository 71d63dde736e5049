"""``prove``: SCH-2 for one graph, by one decider or two that must agree (DESIGN §4).

``prove(graph, engine=...)`` prepares the problem (``conflicts.prepare``:
``break_save_cycles``, then the acyclic dependency graph and the conflicts),
runs the decider(s) and turns the answer into a ``Proof``:

- ``PROVED``: every conflicting pair is ordered, so every legal schedule is
  conflict-equivalent to every other and computes the reference result;
- ``COUNTEREXAMPLE``: the first unordered pair (in creation order) and two
  legal schedules that order it oppositely, both checked against SCH-1 here;
- ``INCONCLUSIVE``: some pair is undecided (a Z3 ``unknown`` or timeout, or
  enumeration past its limit) and none is unordered. Never reported as proved.

Engine ``"both"`` runs ``reach`` and ``z3`` and raises ``InternalError`` if they
give different orders for any pair Z3 decided: that is a bug in the suite.
The proof works from raw effects and never verifies the graph: on an invalid
graph it shows which schedules an ownership rule would have ruled out.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass
from typing import Callable

from refcompiler.deps import check_schedule
from refcompiler.effects import node_effects
from refcompiler.errors import InternalError, InvariantViolation, UsageError
from refcompiler.graph import Graph
from refcompiler.proofs import enumerate as enumeration
from refcompiler.proofs import reach, z3_decider
from refcompiler.proofs.conflicts import Conflict, Decision, Order, Pair, Problem, prepare

__all__ = ["Verdict", "Counterexample", "Proof", "prove", "decide", "ENGINES", "describe_conflict"]


class Verdict(enum.Enum):
    PROVED = "proved"
    COUNTEREXAMPLE = "counterexample"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Counterexample:
    """``nodes`` conflict on ``storage`` and are unordered: ``schedules[0]`` (legal)
    runs ``nodes[0]`` first, ``schedules[1]`` (legal) runs ``nodes[1]`` first."""

    storage: str
    nodes: tuple[str, str]
    schedules: tuple[tuple[str, ...], tuple[str, ...]]


@dataclass(frozen=True)
class Proof:
    verdict: Verdict
    engine: str
    pairs_checked: int
    seconds: float
    counterexample: Counterexample | None
    detail: str = ""


Decider = Callable[..., Decision]

# "both" is not a decider of its own: it runs reach and z3 and compares them.
ENGINES: dict[str, Decider] = {
    reach.ENGINE: reach.decide,
    z3_decider.ENGINE: z3_decider.decide,
    enumeration.ENGINE: enumeration.decide,
}
BOTH = "both"


def prove(graph: Graph, *, engine: str = BOTH, timeout: float | None = None) -> Proof:
    """Decide SCH-2 for ``graph`` from its raw effects (the graph is not verified).

    ``engine``: ``"reach"``, ``"z3"``, ``"both"`` (default) or ``"enumerate"``
    (small graphs only). ``timeout``: seconds for the Z3 and enumeration
    deciders; when it runs out the proof is inconclusive. Raises ``UsageError``
    for an unknown engine or a timeout not above 0, SCH-1 (or G-1) if no legal
    schedule exists even after ``break_save_cycles``, ``InternalError`` if the
    deciders disagree or a witness is not what it claims.
    """
    if engine != BOTH and engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r} (known: {', '.join([*ENGINES, BOTH])})")
    if timeout is not None and not timeout > 0:
        raise UsageError(f"the timeout must be above 0 seconds, got {timeout}")
    start = time.perf_counter()
    deadline = None if timeout is None else time.monotonic() + timeout
    problem = prepare(graph)
    decision = decide(problem, engine, deadline=deadline)
    return conclude(problem, decision, engine, time.perf_counter() - start)


def decide(problem: Problem, engine: str, *, deadline: float | None = None) -> Decision:
    """The decision of ``engine`` (``"both"``: reach and z3, compared)."""
    if engine != BOTH:
        return ENGINES[engine](problem, deadline=deadline)
    fast = reach.decide(problem)
    symbolic = z3_decider.decide(problem, deadline=deadline)
    _check_agreement(problem, fast, symbolic)
    _check_witness(problem, fast)
    return Decision(BOTH, symbolic.orders, symbolic.witness, symbolic.detail)


def _check_agreement(problem: Problem, fast: Decision, symbolic: Decision) -> None:
    for pair in problem.pairs:
        mine, theirs = fast.orders[pair], symbolic.orders[pair]
        if theirs is not Order.UNKNOWN and mine is not theirs:
            a, b = pair
            raise InternalError(
                f"the deciders disagree on '{a}' and '{b}' in '{problem.graph.name}': "
                f"{fast.engine} says {mine.value}, {symbolic.engine} says {theirs.value}"
            )


def _check_witness(problem: Problem, decision: Decision) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The decision's witness for its first unordered pair, checked: both orders
    legal (SCH-1) and the pair the opposite way round in each."""
    pair = decision.first(Order.UNORDERED)
    if pair is None:
        return ((), ())
    a, b = pair
    if decision.witness is None:
        raise InternalError(f"{decision.engine} calls '{a}' and '{b}' unordered but gives no witness")
    first, second = decision.witness
    for k, order in enumerate((first, second), 1):
        try:
            check_schedule(problem.graph, order, problem.deps)
        except InvariantViolation as e:
            raise InternalError(f"{decision.engine}'s witness schedule {k} is illegal: {e}") from None
    if not (first.index(a) < first.index(b) and second.index(b) < second.index(a)):
        raise InternalError(f"{decision.engine}'s witness schedules do not order '{a}' and '{b}' oppositely")
    return first, second


def conclude(problem: Problem, decision: Decision, engine: str, seconds: float) -> Proof:
    """The ``Proof`` a decision amounts to (the witness checked against SCH-1)."""
    decided = sum(o is not Order.UNKNOWN for o in decision.orders.values())
    notes = [decision.detail] if decision.detail else []
    if problem.rewritten:
        notes.append(
            "memory edges closed a cycle through saves; proved on the graph after break_save_cycles "
            f"(added {', '.join(problem.rewritten)})"
        )
    pair = decision.first(Order.UNORDERED)
    if pair is not None:
        schedules = _check_witness(problem, decision)
        conflict = _conflict_of(problem, pair)
        cex = Counterexample(conflict.storage, pair, schedules)
        why = describe_conflict(problem.graph, conflict) + ", and no dependency orders them"
        return Proof(Verdict.COUNTEREXAMPLE, engine, decided, seconds, cex, "; ".join([why, *notes]))
    if decided < len(decision.orders):
        return Proof(Verdict.INCONCLUSIVE, engine, decided, seconds, None, "; ".join(notes))
    why = f"every one of {decided} conflicting pairs is ordered by the dependency graph"
    return Proof(Verdict.PROVED, engine, decided, seconds, None, "; ".join([why, *notes]))


def _conflict_of(problem: Problem, pair: Pair) -> Conflict:
    return next(c for c in problem.conflicts if c.pair == pair)


def describe_conflict(graph: Graph, conflict: Conflict) -> str:
    """One phrase: who writes and who reads the storage, e.g. ``'s' writes
    placeholder 'A' and 'late' reads it``."""
    effects = node_effects(graph)
    s = graph.storage_by_name[conflict.storage]
    what = f"{s.kind.value} '{s.name}'"
    a, b = conflict.a, conflict.b
    a_writes = s.name in effects[a].writes
    b_writes = s.name in effects[b].writes
    if a_writes and b_writes:
        return f"'{a}' and '{b}' both write {what}"
    writer, reader = (a, b) if a_writes else (b, a)
    return f"'{writer}' writes {what} and '{reader}' reads it"
