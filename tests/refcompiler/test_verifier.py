"""The graph verifier: each invariant (G-1, OWN-1..4) rejects a graph built to break it, and only it.

Most broken graphs are files under tests/data/invalid/, named ``<ID>.json`` or
``<ID>.<flavour>.json`` (the CLI tests use the same files); a few that the
loader itself would refuse (``refc-graph/1`` rejects them as malformed) are
built directly as ``Graph`` values here.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specs import INVARIANTS, Dtype, OpKind, TensorType

from refcompiler.errors import InvariantViolation
from refcompiler.graph import Graph, Node, Ref, Storage, StorageKind
from refcompiler.graph_json import load_graph
from refcompiler.verifier import infer_types, verify, violations

from tests.refcompiler.local_graphs import graphs

ROOT = Path(__file__).resolve().parents[2]
INVALID = ROOT / "tests" / "data" / "invalid"
INVALID_FILES = sorted(INVALID.glob("*.json"))


def expected_id(path: Path) -> str:
    """``OWN-2.json`` and ``OWN-2.foreign_state.json`` both break OWN-2."""
    return path.name.split(".")[0]


def ids(graph: Graph) -> set[str]:
    return {v.invariant for v in violations(graph)}


def test_there_is_an_invalid_graph_for_every_graph_level_invariant():
    covered = {expected_id(p) for p in INVALID_FILES}
    assert covered == {"G-1", "OWN-1", "OWN-2", "OWN-3", "OWN-4"}
    assert covered <= set(INVARIANTS)


def test_g1_has_several_flavours():
    flavours = {p.name for p in INVALID_FILES if expected_id(p) == "G-1"}
    for flavour in ("cycle", "arity", "dtype", "shape", "attribute", "result_index"):
        assert f"G-1.{flavour}.json" in flavours


@pytest.mark.parametrize("path", INVALID_FILES, ids=[p.stem for p in INVALID_FILES])
def test_invalid_graph_breaks_exactly_its_invariant(path):
    graph = load_graph(path)
    assert ids(graph) == {expected_id(path)}
    with pytest.raises(InvariantViolation) as info:
        verify(graph)
    assert info.value.invariant == expected_id(path)


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.json")), ids=lambda p: p.stem)
def test_examples_are_valid(path):
    graph = load_graph(path)
    assert violations(graph) == []
    types = verify(graph)
    assert all(isinstance(t, TensorType) for t in types.values())


# ----------------------------------------------------- built as values


def base() -> Graph:
    """A valid graph: out = relu(A)."""
    return Graph(
        name="base",
        storage=(
            Storage("A", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (4,)),
            Storage("out", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (4,)),
        ),
        nodes=(
            Node("r", OpKind.RELU, (Ref("A"),)),
            Node("s", OpKind.SAVE, (Ref("r"),), attrs=(("target", "out"),)),
        ),
    )


def test_base_is_valid():
    assert ids(base()) == set()


def test_g1_duplicate_name():
    g = base()
    g = g.with_nodes(g.nodes[:1] + (Node("A", OpKind.NEG, (Ref("A"),)),) + g.nodes[1:])
    assert ids(g) == {"G-1"}


def test_g1_reference_to_nothing():
    g = base()
    g = g.with_nodes((Node("r", OpKind.RELU, (Ref("nothing"),)),) + g.nodes[1:])
    assert ids(g) == {"G-1"}


def test_g1_result_index_on_storage():
    g = base()
    g = g.with_nodes((Node("r", OpKind.RELU, (Ref("A", 0),)),) + g.nodes[1:])
    assert ids(g) == {"G-1"}


def test_g1_reading_a_node_without_results():
    g = base()
    g = g.with_nodes(g.nodes + (Node("n", OpKind.NEG, (Ref("s"),)),))
    assert ids(g) == {"G-1"}


def test_g1_save_target_that_is_no_storage():
    g = base()
    g = g.with_nodes(g.nodes[:1] + (Node("s", OpKind.SAVE, (Ref("r"),), attrs=(("target", "r"),)),))
    assert ids(g) == {"G-1"}


def test_g1_save_without_target():
    g = base()
    g = g.with_nodes(g.nodes[:1] + (Node("s", OpKind.SAVE, (Ref("r"),)),))
    assert ids(g) == {"G-1"}


def test_g1_self_loop_is_a_cycle():
    g = base()
    g = g.with_nodes((Node("r", OpKind.ADD, (Ref("A"), Ref("r"))),) + g.nodes[1:])
    assert ids(g) == {"G-1"}


def _messages(graph: Graph) -> list[str]:
    return [str(v) for v in violations(graph) if v.invariant == "G-1"]


def test_g1_a_cycle_through_two_nodes_of_one_name_is_found_and_a_repeated_name_alone_is_no_cycle():
    # two nodes named 'r' leave no evaluation order (Graph.data_order is None):
    # the cycle is then looked for over names, as networkx sees the data graph
    g = base()
    looped = g.with_nodes(g.nodes + (Node("t", OpKind.NEG, (Ref("r"),)), Node("r", OpKind.NEG, (Ref("t"),))))
    assert looped.data_order is None
    assert [m for m in _messages(looped) if "cycle" in m] == ["G-1: the data graph has a cycle: r -> t -> r"]
    twice = g.with_nodes(g.nodes + (Node("r", OpKind.NEG, (Ref("A"),)),))
    assert twice.data_order is None
    assert not [m for m in _messages(twice) if "cycle" in m]
    assert any("is used 2 times" in m for m in _messages(twice))


def test_the_verifier_reads_the_op_table_through_its_swap_point():
    from refcompiler import spec
    from refcompiler.variants import installed

    def relu_needs_two(kind):
        entry = spec.spec_of.original(kind)
        return replace(entry, inputs=("x", "y")) if kind is OpKind.RELU else entry

    with installed({spec.spec_of: relu_needs_two}):
        assert _messages(base()) == ["G-1: node 'r' (relu) has 1 inputs, needs 2"]
    assert violations(base()) == []


def test_g1_bad_attribute_value_shapes():
    # perm that is no permutation, reshape to the wrong element count,
    # an axis out of range, a bool where an int is due
    g = base()
    for node in (
        Node("t", OpKind.TRANSPOSE, (Ref("A"),), attrs=(("perm", (0, 0)),)),
        Node("t", OpKind.RESHAPE, (Ref("A"),), attrs=(("shape", (3,)),)),
        Node("t", OpKind.REDUCE_SUM, (Ref("A"),), attrs=(("axis", 1),)),
        Node("t", OpKind.CONCAT, (Ref("A"),), attrs=(("axis", True),)),
    ):
        assert ids(g.with_nodes(g.nodes + (node,))) == {"G-1"}, node


def test_g1_state_must_be_float32():
    g = Graph(
        name="int_state",
        storage=(
            Storage("A", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (4,)),
            Storage("acc", StorageKind.OWNED, Dtype.INT32, (4,), owner="running"),
        ),
        nodes=(Node("running", OpKind.ACCUMULATE, (Ref("A"),), state=("acc",)),),
    )
    assert ids(g) == {"G-1"}
    fixed = replace(g, storage=(g.storage[0], replace(g.storage[1], dtype=Dtype.FLOAT32)))
    assert ids(fixed) == set()


def test_own1_owner_that_is_no_node():
    g = base()
    g = replace(g, storage=g.storage + (Storage("acc", StorageKind.OWNED, Dtype.FLOAT32, (4,), owner="ghost"),))
    # a dangling owner is a broken reference: G-1, not OWN-1
    assert ids(g) == {"G-1"}


def test_verify_raises_the_first_violation_and_infer_types_gives_result_types():
    g = load_graph(INVALID / "OWN-4.json")
    with pytest.raises(InvariantViolation) as info:
        verify(g)
    assert info.value.invariant == "OWN-4"
    assert set(info.value.names) == {"out", "s1", "s2"}
    types = infer_types(load_graph(ROOT / "examples" / "sgd_momentum.json"))
    assert types[("step", 0)] == TensorType((3, 2), Dtype.FLOAT32)
    assert types[("total", 0)] == TensorType((), Dtype.FLOAT32)


def _max_of(a: Dtype, b: Dtype, op: OpKind = OpKind.MAX) -> Graph:
    return Graph(
        name="max_dtypes",
        storage=(Storage("a", StorageKind.PLACEHOLDER, a, (2, 3)), Storage("b", StorageKind.PLACEHOLDER, b, (3,))),
        nodes=(Node("m", op, (Ref("a"), Ref("b"))),),
    )


def test_max_takes_int32_on_both_inputs_and_gives_int32():
    assert infer_types(_max_of(Dtype.INT32, Dtype.INT32))[("m", 0)] == TensorType((2, 3), Dtype.INT32)
    assert infer_types(_max_of(Dtype.FLOAT32, Dtype.FLOAT32))[("m", 0)] == TensorType((2, 3), Dtype.FLOAT32)


@pytest.mark.parametrize(
    "a, b, op, message",
    [
        (Dtype.INT32, Dtype.FLOAT32, OpKind.MAX, "node 'm' (max) input 1 'b' is float32, needs int32"),
        (Dtype.FLOAT32, Dtype.INT32, OpKind.MAX, "node 'm' (max) input 1 'b' is int32, needs float32"),
        (Dtype.INT32, Dtype.INT32, OpKind.ADD, "node 'm' (add) input 0 'a' is int32, needs float32"),
    ],
)
def test_mixed_dtypes_of_max_and_int32_of_other_binaries_break_g1(a, b, op, message):
    g = _max_of(a, b, op)
    assert ids(g) == {"G-1"}
    with pytest.raises(InvariantViolation, match=re.escape(message)) as info:
        verify(g)
    assert info.value.invariant == "G-1"


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(graphs(max_steps=10), st.randoms(use_true_random=False))
def test_the_evaluation_order_is_networkx_lexicographic_topological_order(g, rnd):
    import networkx as nx

    from refcompiler.verifier import data_graph, evaluation_order

    shuffled = g.with_nodes(tuple(rnd.sample(list(g.nodes), len(g.nodes))))  # creation order is what breaks ties
    for h in (g, shuffled):
        want = list(nx.lexicographical_topological_sort(data_graph(h), key=h.creation_order.__getitem__))
        assert h.data_order == tuple(want) and list(evaluation_order(h)) == want


def test_the_evaluation_order_of_a_cyclic_graph_is_networkx_walk_and_error():
    import networkx as nx

    from refcompiler.verifier import evaluation_order

    a, b, c = Node("a", OpKind.NEG, (Ref("x"),)), Node("b", OpKind.NEG, (Ref("c"),)), Node("c", OpKind.NEG, (Ref("b"),))
    g = Graph("cyc", (), (a, b, c))
    assert g.data_order is None
    walk = evaluation_order(g)
    assert next(walk) == "a"  # the nodes before the cycle, then networkx's error
    with pytest.raises(nx.NetworkXUnfeasible):
        list(walk)
    assert Graph("dup", (), (a, a)).data_order is None  # two nodes, one name: left to networkx


def _counting_verdicts(monkeypatch) -> list[Graph]:
    """The graphs the verifier works a verdict out for (not taken from its memo)."""
    from refcompiler import verifier

    worked: list[Graph] = []
    original = verifier._verdict

    def counted(graph):
        worked.append(graph)
        return original(graph)

    monkeypatch.setattr(verifier, "_verdict", counted)
    return worked


def test_a_valid_graph_checked_twice_is_worked_out_once(monkeypatch):
    worked = _counting_verdicts(monkeypatch)
    graph = load_graph(ROOT / "examples" / "sgd_momentum.json")
    types = verify(graph)
    types.clear()  # a caller's copy: the memo keeps its own
    assert violations(graph) == [] and verify(graph) == infer_types(graph) != {}
    assert worked == [graph]
    verify(load_graph(ROOT / "examples" / "sgd_momentum.json"))  # an equal graph, another object
    assert len(worked) == 2


def test_the_memo_is_not_used_under_another_mutant_or_limit_nor_for_an_invalid_graph(monkeypatch):
    from refcompiler.errors import LimitExceeded
    from refcompiler.mutants import activate

    worked = _counting_verdicts(monkeypatch)
    invalid = load_graph(ROOT / "corpus" / "reject.OWN-2.json")
    with activate("verify-allow-foreign-state"):
        assert violations(invalid) == []  # the mutant lets it through
    assert [v.invariant for v in violations(invalid)] == ["OWN-2"]
    assert [v.invariant for v in violations(invalid)] == ["OWN-2"] and len(worked) == 3
    graph = load_graph(ROOT / "examples" / "sgd_momentum.json")
    verify(graph)
    monkeypatch.setenv("REFC_MAX_ELEMENTS", "2")
    with pytest.raises(LimitExceeded):
        verify(graph)
