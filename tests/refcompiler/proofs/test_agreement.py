"""The three deciders agree (issue 4, item 5): reach = z3 = enumeration of every
legal order, on random graphs valid and invalid (OWN-2/3/4, from raw effects),
and under the mutant that drops memory edges. Enumeration shares no reasoning
with the other two, so agreement is evidence that both are right."""

from __future__ import annotations

from hypothesis import Phase, find, given, settings

from refcompiler.deps import check_schedule
from refcompiler.mutants import activate
from refcompiler.proofs import Verdict, prove
from refcompiler.proofs import enumerate as enumeration
from refcompiler.proofs import reach, z3_decider
from refcompiler.proofs.conflicts import Order, prepare
from refcompiler.verifier import verify, violations
from tests.refcompiler.proofs.graphs import raw_graphs

LIMIT = 20_000


def _agree(graph) -> dict:
    problem = prepare(graph)
    by_reach = reach.decide(problem).orders
    by_z3 = z3_decider.decide(problem).orders
    by_enum = enumeration.decide(problem, limit=LIMIT).orders
    for pair in problem.pairs:
        assert by_reach[pair] is by_z3[pair], (pair, by_reach[pair], by_z3[pair])
        assert by_reach[pair] is not Order.UNKNOWN
        if by_enum[pair] is not Order.UNKNOWN:  # only past the limit, on the rare wide graph
            assert by_enum[pair] is by_reach[pair], (pair, by_enum[pair], by_reach[pair])
    return by_reach


def _check_verdicts(graph) -> set[Verdict]:
    proofs = [prove(graph, engine=e) for e in ("reach", "z3", "both")]
    verdicts = {p.verdict for p in proofs}
    assert len(verdicts) == 1
    for p in proofs:
        if p.counterexample is not None:
            a, b = p.counterexample.nodes
            first, second = p.counterexample.schedules
            prepared = prepare(graph).graph
            check_schedule(prepared, first)
            check_schedule(prepared, second)
            assert first.index(a) < first.index(b) and second.index(b) < second.index(a)
    return verdicts


@given(raw_graphs(allow_invalid=False))
def test_valid_graphs_agree_and_are_proved(graph):
    verify(graph)
    orders = _agree(graph)
    assert all(o.ordered for o in orders.values())
    assert _check_verdicts(graph) == {Verdict.PROVED}


@given(raw_graphs(allow_invalid=True))
def test_invalid_graphs_agree(graph):
    orders = _agree(graph)
    verdicts = _check_verdicts(graph)
    unordered = any(o is Order.UNORDERED for o in orders.values())
    assert verdicts == {Verdict.COUNTEREXAMPLE if unordered else Verdict.PROVED}
    if not violations(graph):
        assert verdicts == {Verdict.PROVED}


@given(raw_graphs(allow_invalid=False))
def test_deciders_agree_under_a_dependency_mutant(graph):
    with activate("sched-drop-save-war"):
        _agree(graph)
        _check_verdicts(graph)


def test_the_strategy_reaches_counterexamples_for_each_ownership_rule():
    """Without this, the agreement property could pass on graphs that never conflict."""
    for rule in ("OWN-2", "OWN-3", "OWN-4"):
        found = find(
            raw_graphs(allow_invalid=True),
            lambda g, rule=rule: {v.invariant for v in violations(g)} == {rule}
            and prove(g, engine="reach").verdict is Verdict.COUNTEREXAMPLE,
            settings=settings(max_examples=2000, database=None, derandomize=True, phases=[Phase.generate]),
        )
        assert prove(found, engine="both").verdict is Verdict.COUNTEREXAMPLE
