"""``all_legal_orders`` and the enumeration decider on tiny literal graphs."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specs import OpKind

from refcompiler.deps import is_legal
from refcompiler.errors import InvariantViolation, UsageError
from refcompiler.graph import StorageKind
from refcompiler.graph_json import load_graph
from refcompiler.proofs import all_legal_orders
from refcompiler.proofs import enumerate as enumeration
from refcompiler.proofs.conflicts import Order, prepare
from tests.refcompiler.proofs.graphs import graph, node, save, storage

ROOT = Path(__file__).resolve().parents[3]
P = StorageKind.PLACEHOLDER


def test_every_legal_order_of_read_then_save():
    g = load_graph(ROOT / "examples" / "read_then_save.json")
    orders = set(all_legal_orders(g))
    # 'sum' and 'late' before 's'; 'late' before 'save_late'
    assert orders == {
        ("sum", "late", "s", "save_late"),
        ("sum", "late", "save_late", "s"),
        ("late", "sum", "s", "save_late"),
        ("late", "sum", "save_late", "s"),
        ("late", "save_late", "sum", "s"),
    }
    assert all(is_legal(g, o) for o in orders)


def test_the_limit_bounds_the_orders():
    g = graph("g", [storage("A", P)], [node(f"n{i}", OpKind.RELU, "A") for i in range(5)])
    assert len(list(all_legal_orders(g))) == 120
    assert len(list(all_legal_orders(g, limit=7))) == 7
    assert list(all_legal_orders(g, limit=0)) == []
    with pytest.raises(UsageError):
        all_legal_orders(g, limit=-1)


def test_a_cyclic_graph_has_no_orders():
    g = graph("g", [storage("A", P)], [node("x", OpKind.RELU, "y"), node("y", OpKind.RELU, "x")])
    with pytest.raises(InvariantViolation):
        all_legal_orders(g)


def test_enumeration_decides_and_stops_at_its_limit():
    # 'r' reads A and 's' saves into B: no conflict; 't' saves into A: conflicts with 'r'
    g = graph(
        "g",
        [storage("A", P), storage("B", P)],
        [node("r", OpKind.RELU, "A"), node("x", OpKind.RELU, "B"), save("t", "x", "A"), node("u", OpKind.RELU, "B")],
    )
    problem = prepare(g)
    full = enumeration.decide(problem)
    assert full.orders == {("r", "t"): Order.A_FIRST}
    assert full.legal_orders == len(list(all_legal_orders(g)))
    cut = enumeration.decide(problem, limit=1)
    assert cut.orders == {("r", "t"): Order.UNKNOWN}
    assert cut.legal_orders is None


def test_enumeration_finds_an_unordered_pair_within_any_limit():
    g = graph("g", [storage("A", P), storage("B", P)], [node("r", OpKind.RELU, "A"), save("t", "B", "A")])
    with_memory_edge = enumeration.decide(prepare(g))
    assert with_memory_edge.orders == {("r", "t"): Order.A_FIRST}
    from refcompiler.mutants import activate

    with activate("sched-drop-save-war"):
        decision = enumeration.decide(prepare(g), limit=2)
    assert decision.orders == {("r", "t"): Order.UNORDERED}
    first, second = decision.witness
    assert first.index("r") < first.index("t") and second.index("t") < second.index("r")



@settings(max_examples=200, deadline=None)
@given(st.integers(0, 7).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.tuples(st.integers(0, n), st.integers(0, n)), max_size=12))),
       st.permutations(range(8)))
def test_legal_orders_of_gives_networkx_sequence(dag: tuple[int, list[tuple[int, int]]], names: list[int]):
    """The enumeration is networkx's, order for order (so a campaign's
    exhaustive schedules come in the sequence they always came in), on DAGs
    whose nodes were added in any order, with edges in any order."""
    n, pairs = dag
    deps = nx.DiGraph()
    deps.add_nodes_from(f"v{names[i]}" for i in range(n + 1))
    deps.add_edges_from((f"v{names[min(a, b)]}", f"v{names[max(a, b)]}") for a, b in pairs if a != b)
    want = [tuple(o) for o in nx.all_topological_sorts(deps)]
    assert list(enumeration.legal_orders_of(deps)) == want
    assert list(enumeration.legal_orders_of(deps, limit=3)) == want[:3]
    assert list(enumeration.legal_orders_of(deps, limit=0)) == []


def test_legal_orders_of_refuses_a_cycle():
    deps = nx.DiGraph([("a", "b"), ("b", "a")])
    with pytest.raises(nx.NetworkXUnfeasible):
        list(enumeration.legal_orders_of(deps))
    assert list(enumeration.legal_orders_of(nx.DiGraph())) == [()]
