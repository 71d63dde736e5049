"""The graph-level reducer: every edit keeps the graph acceptable, and the
result is a local minimum that still fails."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings

from specs import OpKind

from refcompiler.graph import Node, Ref, StorageKind, freeze_attrs
from refcompiler.graph_json import graph_from_doc, graph_to_doc
from refcompiler.variants import installed
from refcompiler.verifier import violations

from fuzz.shrink import (
    breaks_only, bypass_node, candidates, collapse_view, drop_node, drop_storage, reduce_graph, simplify_op, untidy, valid,
)
from fuzz.strategies import REJECTABLE, graphs, invalid_graphs


def _chain():
    return graph_from_doc(
        {
            "format": "refc-graph/1",
            "name": "chain",
            "storage": [
                {"name": "x", "kind": "placeholder", "dtype": "float32", "shape": [2, 3], "init": {"seed": 1}},
                {"name": "unused", "kind": "constant", "dtype": "float32", "shape": [1], "init": {"seed": 2}},
                {"name": "acc", "kind": "owned", "dtype": "float32", "shape": [2, 3], "owner": "run"},
                {"name": "out", "kind": "placeholder", "dtype": "float32", "shape": [3, 2]},
            ],
            "nodes": [
                {"name": "a", "op": "relu", "inputs": ["x"]},
                {"name": "run", "op": "accumulate", "inputs": ["a"], "state": ["acc"]},
                {"name": "r", "op": "roll", "inputs": ["run"]},
                {"name": "t", "op": "transpose", "inputs": ["r"]},
                {"name": "total", "op": "reduce_sum", "inputs": ["t"]},
                {"name": "s", "op": "save", "inputs": ["t"], "attrs": {"target": "out"}},
            ],
        }
    )


def test_drop_node_rewires_readers_to_a_fresh_placeholder():
    g = drop_node(_chain(), "run")
    assert g is not None and valid(g)
    assert "acc" not in g.storage_by_name  # the owned state went with its owner
    fresh = g.node_by_name["r"].inputs[0].name
    s = g.storage_by_name[fresh]
    assert s.kind is StorageKind.PLACEHOLDER and s.shape == (2, 3)


def test_drop_node_refuses_a_used_rank0_result():
    g = graph_from_doc(
        {
            "format": "refc-graph/1",
            "name": "r0",
            "storage": [{"name": "x", "kind": "placeholder", "dtype": "float32", "shape": [3], "init": {"seed": 1}}],
            "nodes": [{"name": "sum", "op": "reduce_sum", "inputs": ["x"]}, {"name": "n", "op": "neg", "inputs": ["sum"]}],
        }
    )
    assert drop_node(g, "sum") is None  # storage cannot have rank 0
    assert drop_node(g, "n") is not None


def test_bypass_node_reads_the_input_instead():
    (g,) = list(bypass_node(_chain(), "a"))
    assert valid(g) and g.node_by_name["run"].inputs[0].name == "x"
    assert list(bypass_node(_chain(), "t")) == []  # transpose changes the type


def test_collapse_view_reads_through_a_chain_of_reshapes():
    from refcompiler.reference import run_reference
    from refcompiler.values import same_bits

    g = graph_from_doc(
        {
            "format": "refc-graph/1",
            "name": "views",
            "storage": [
                {"name": "x", "kind": "placeholder", "dtype": "float32", "shape": [2, 3], "init": {"seed": 1}},
                {"name": "out", "kind": "placeholder", "dtype": "float32", "shape": [6]},
            ],
            "nodes": [
                {"name": "a", "op": "reshape", "inputs": ["x"], "attrs": {"shape": [3, 2]}},
                {"name": "b", "op": "reshape", "inputs": ["a"], "attrs": {"shape": [6, 1]}},
                {"name": "c", "op": "reshape", "inputs": ["b"], "attrs": {"shape": [6]}},
                {"name": "s", "op": "save", "inputs": ["c"], "attrs": {"target": "out"}},
            ],
        }
    )
    collapsed = collapse_view(g, "c")
    assert collapsed is not None and valid(collapsed)
    assert [n.name for n in collapsed.nodes] == ["a", "c", "s"] and collapsed.node_by_name["c"].inputs[0].name == "a"
    assert same_bits(run_reference(collapsed)["out"], run_reference(g)["out"])
    assert collapse_view(g, "a") is None  # reads storage, not a reshape
    assert collapse_view(_chain(), "t") is None  # not a reshape


def test_drop_storage_only_drops_what_nothing_uses():
    assert drop_storage(_chain(), "x") is None
    assert drop_storage(_chain(), "out") is None  # a save target
    g = drop_storage(_chain(), "unused")
    assert g is not None and "unused" not in g.storage_by_name


def test_reduce_reaches_a_local_minimum_that_still_fails():
    def has_roll(g):
        return any(n.op is OpKind.ROLL for n in g.nodes)

    small = reduce_graph(_chain(), has_roll)
    assert valid(small) and has_roll(small)
    assert [n.op for n in small.nodes] == [OpKind.ROLL]
    assert len(small.storage) == 1  # the roll's fresh input
    # no single edit keeps it failing: a local minimum
    assert not any(valid(c) and has_roll(c) and len(c.nodes) < len(small.nodes) for c in candidates(small))


def test_reduce_gives_up_after_max_attempts():
    calls = []

    def never(g):
        calls.append(g)
        return False

    assert reduce_graph(_chain(), never, max_attempts=3) == _chain()
    assert len(calls) == 3


@settings(max_examples=15)
@given(graphs(max_nodes=6))
def test_every_edit_of_a_valid_graph_that_is_kept_is_valid(graph):
    small = reduce_graph(graph, lambda g: len(g.nodes) >= 1)
    assert valid(small) and len(small.nodes) == 1


@pytest.mark.parametrize("invariant", REJECTABLE)
def test_reducing_an_invalid_graph_keeps_exactly_its_invariant(invariant):
    @settings(max_examples=15, database=None, suppress_health_check=list(HealthCheck))
    @given(invalid_graphs(invariant))
    def check(graph):
        small = reduce_graph(graph, lambda g: True, acceptable=breaks_only(invariant))
        assert {v.invariant for v in violations(small)} == {invariant}
        if invariant != "G-1":  # a G-1 graph has no types, so no node with users can go (drop_node needs them)
            assert len(small.nodes) <= 2  # the breaking edit itself: one node, two with its owner or producer

    check()


def test_an_invalid_case_s_ops_are_simplified_too():
    """``simplify_op`` keeps what the reducer accepts: for an invalid case, a
    graph breaking exactly its invariant (it kept valid graphs only)."""
    doc = graph_to_doc(_chain())
    doc["storage"].append({"name": "k", "kind": "constant", "dtype": "float32", "shape": [2, 3], "init": {"seed": 3}})
    doc["nodes"].append({"name": "bad", "op": "accumulate", "inputs": ["x"], "state": ["k"]})  # OWN-3
    g = graph_from_doc(doc)
    assert list(simplify_op(g, "r")) == []  # valid graphs only: none
    simpler = list(simplify_op(g, "r", acceptable=breaks_only("OWN-3")))
    assert len(simpler) == 2 and all(breaks_only("OWN-3")(c) for c in simpler)
    assert all("r" not in c.node_by_name or c.node_by_name["r"].op is not OpKind.ROLL for c in simpler)


def _foreign_read_second():
    """``_chain`` plus ``b = add(x, acc)``: owned ``acc`` read as the second input of a non-owner (OWN-2)."""
    g = _chain()
    return g.with_nodes((*g.nodes, Node("b", OpKind.ADD, (Ref("x"), Ref("acc")), (), freeze_attrs({}))))


def test_a_case_the_verifier_wrongly_accepts_still_reduces():
    """The verifier under test checks only a node's first input for OWN-2: it
    accepts ``b``. Were the reducer to ask that verifier whether a smaller graph
    still breaks OWN-2, it would keep no edit; the ownership rules are judged
    apart from it (``fuzz.ownership``)."""
    from refcompiler import ownership

    def first_input_only(graph):
        return ownership.check_own2.original(graph.with_nodes(tuple(replace(n, inputs=n.inputs[:1]) for n in graph.nodes)))

    with installed({ownership.check_own2: first_input_only}):
        assert violations(_foreign_read_second()) == []  # the bug
        small = reduce_graph(_foreign_read_second(), lambda g: not violations(g), acceptable=breaks_only("OWN-2"))
    assert {v.invariant for v in violations(small)} == {"OWN-2"}  # the correct verifier
    assert sorted(n.name for n in small.nodes) == ["b", "run"]  # the reader and the owner


def test_a_case_the_verifier_wrongly_rejects_still_reduces():
    """The verifier under test calls every read of a constant OWN-3: it rejects
    ``_chain`` once ``a`` reads a constant. The reducer keeps edits of the valid
    graph all the same."""
    from refcompiler import ownership
    from refcompiler.errors import InvariantViolation

    def constants_never_read(graph):
        yield from ownership.check_own3.original(graph)
        for node in graph.nodes:
            if any(graph.storage_by_name.get(r.name) is not None and graph.storage_by_name[r.name].kind is StorageKind.CONSTANT for r in node.inputs):
                yield InvariantViolation("OWN-3", f"{node.name} reads a constant", names=(node.name,))

    doc = graph_to_doc(_chain())
    doc["storage"].append({"name": "k", "kind": "constant", "dtype": "float32", "shape": [2, 3], "init": {"seed": 3}})
    doc["nodes"][0]["inputs"] = ["k"]  # a = relu(k)
    g = graph_from_doc(doc)
    assert violations(g) == []
    with installed({ownership.check_own3: constants_never_read}):
        small = reduce_graph(g, lambda g: bool(violations(g)), acceptable=valid)
    assert violations(small) == [] and len(small.nodes) == 1


def _untidy_chain():
    """``_chain`` with a no-op view ``v`` (a reshape of x to its own shape) in front of ``a``."""
    g = _chain()
    view = Node("v", OpKind.RESHAPE, (Ref("x"),), (), freeze_attrs({"shape": [2, 3]}))
    a, *rest = g.nodes
    return g.with_nodes((view, replace(a, inputs=(Ref("v"),)), *rest))


def test_untidy_names_dead_nodes_noop_views_and_unused_storage():
    g = _untidy_chain()
    assert valid(g)
    assert untidy(g) == ["v", "total", "unused"]  # total: a reduce_sum nothing reads


def test_the_tidy_edits_come_first_so_a_short_budget_still_removes_them():
    def has_roll(g):
        return any(n.op is OpKind.ROLL for n in g.nodes)

    small = reduce_graph(_untidy_chain(), has_roll, max_attempts=3)
    assert untidy(small) == [] and has_roll(small) and valid(small)
    assert {"v", "total"}.isdisjoint(small.node_by_name) and "unused" not in small.storage_by_name


def test_a_tidy_edit_that_loses_the_failure_is_not_kept():
    def has_noop_view(g):
        return "v" in g.node_by_name

    small = reduce_graph(_untidy_chain(), has_noop_view)
    assert "v" in small.node_by_name  # the failure needs it
    assert untidy(small) == ["v"]


def test_simplify_op_offers_earlier_kinds_of_the_same_arity_and_reduce_takes_them():
    g = _chain()
    assert [c.node_by_name["r"].op for c in simplify_op(g, "r")] == [OpKind.RELU, OpKind.NEG]
    assert list(simplify_op(g, "run")) == []  # an owner keeps its op: its state fits it alone
    small = reduce_graph(g, lambda h: "r" in h.node_by_name)
    assert small.node_by_name["r"].op is OpKind.RELU  # the earliest unary op that fits


def test_simplify_op_renames_a_node_whose_name_says_its_op():
    doc = graph_to_doc(_chain())
    for n in doc["nodes"]:
        n["name"] = {"r": "roll3"}.get(n["name"], n["name"])
        n["inputs"] = [{"r": "roll3"}.get(i, i) for i in n["inputs"]]
    g = graph_from_doc(doc)
    relu, neg = simplify_op(g, "roll3")
    assert relu.node_by_name["relu3"].op is OpKind.RELU and "roll3" not in relu.node_by_name
    assert relu.node_by_name["t"].inputs[0].name == "relu3"  # its reader follows
    assert neg.node_by_name["neg3"].op is OpKind.NEG
    taken = graph_from_doc({**doc, "nodes": [*doc["nodes"], {"name": "relu3", "op": "relu", "inputs": ["x"]}]})
    assert [n.name for n in next(simplify_op(taken, "roll3")).nodes if n.op is OpKind.RELU and n.name != "a"] == ["relu0", "relu3"]


def test_a_graph_with_an_input_too_many_reduces_without_an_error():
    """Type inference assumes the structure checked: on ``relu(x, y)`` it raised
    IndexError, which ended the reducer of a G-1 case."""
    doc = graph_to_doc(_chain())
    doc["nodes"].append({"name": "bad", "op": "relu", "inputs": ["x", "x"]})
    small = reduce_graph(graph_from_doc(doc), lambda g: True, acceptable=breaks_only("G-1"))
    assert [n.name for n in small.nodes] == ["bad"] and {v.invariant for v in violations(small)} == {"G-1"}


def test_a_structure_check_under_test_that_lets_an_input_too_many_through_does_not_end_the_reducer(monkeypatch):
    """With the structure check the code under test, inference meets ``relu(x, x)``
    and raises IndexError: such a graph is no valid one, and has no types."""
    import fuzz.shrink as shrink

    monkeypatch.setattr(shrink, "check_structure", lambda graph: iter(()))
    doc = graph_to_doc(_chain())
    doc["nodes"].append({"name": "bad", "op": "relu", "inputs": ["x", "x"]})
    small = reduce_graph(graph_from_doc(doc), lambda g: "bad" in g.node_by_name, acceptable=breaks_only("G-1"))
    assert "bad" in small.node_by_name and len(small.nodes) < 7
