"""SCH-1 stated apart from the dependency model (``fuzz.sch1``), and the
oracle's use of it: a fault in the model itself, which the compiler and the
oracle's SCH-1 check share, is found as an illegal order blamed on the
scheduler, not as an IR fault blamed on lowering."""

from __future__ import annotations

import networkx as nx

import refcompiler.deps as deps
from refcompiler.graph_json import graph_from_doc

from fuzz.case import Case
from fuzz.oracle import Stage, check_case
from fuzz.sch1 import order_fault


def _graph(nodes: list[dict], shapes: dict[str, list[int]]):  # type: ignore[no-untyped-def]
    storage = [{"name": n, "kind": "placeholder", "dtype": "float32", "shape": s, "init": {"seed": 0}} for n, s in shapes.items()]
    return graph_from_doc({"format": "refc-graph/1", "name": "t", "storage": storage, "nodes": nodes})


# relu reads p through two views; save writes p
VIEWS = _graph(
    [
        {"name": "v1", "op": "reshape", "inputs": ["p"], "attrs": {"shape": [4]}},
        {"name": "v2", "op": "reshape", "inputs": ["v1"], "attrs": {"shape": [2, 2]}},
        {"name": "r", "op": "relu", "inputs": ["v2"]},
        {"name": "s", "op": "save", "inputs": ["q"], "attrs": {"target": "p"}},
    ],
    {"p": [2, 2], "q": [2, 2]},
)


def test_a_reader_through_a_chain_of_views_runs_before_the_save():
    assert order_fault(VIEWS, ["v1", "v2", "r", "s"]) is None
    assert order_fault(VIEWS, ["v1", "v2", "s", "r"]) == ("r", "s", "'r' reads placeholder 'p', which 's' saves")


def test_a_node_runs_after_its_inputs():
    assert order_fault(VIEWS, ["v2", "v1", "r", "s"]) == ("v1", "v2", "'v2' reads its result")


def test_a_save_of_the_placeholder_s_own_value_through_a_view_orders_nothing():
    graph = _graph(
        [
            {"name": "v", "op": "reshape", "inputs": ["p"], "attrs": {"shape": [4]}},
            {"name": "w", "op": "reshape", "inputs": ["v"], "attrs": {"shape": [2, 2]}},
            {"name": "r", "op": "relu", "inputs": ["p"]},
            {"name": "s", "op": "save", "inputs": ["w"], "attrs": {"target": "p"}},
        ],
        {"p": [2, 2]},
    )
    assert order_fault(graph, ["v", "w", "s", "r"]) is None


# the shrunk case of a dependency model that made data edges from a node's first input only
SECOND_INPUT = _graph(
    [
        {"name": "relu0", "op": "relu", "inputs": ["p0"]},
        {"name": "add1", "op": "add", "inputs": ["p1", "relu0"]},
        {"name": "save2", "op": "save", "inputs": ["add1"], "attrs": {"target": "p2"}},
    ],
    {"p0": [1], "p1": [1], "p2": [1]},
)


def test_a_model_missing_an_edge_is_blamed_as_an_illegal_order_not_on_lowering(monkeypatch):
    real = deps.dependency_graph

    def first_inputs_only(graph):  # type: ignore[no-untyped-def]
        g: nx.DiGraph = real(graph)
        for node in graph.nodes:
            for ref in node.inputs[1:]:
                if g.has_edge(ref.name, node.name) and all(r.name != ref.name for r in node.inputs[:1]):
                    g.remove_edge(ref.name, node.name)
        return g

    # the model's own fault: the compiler and the oracle's SCH-1 check both use it
    monkeypatch.setattr(deps, "dependency_graph", first_inputs_only)
    found = check_case(Case(SECOND_INPUT), seed=0).finding
    assert found is not None
    assert (found.stage, found.invariant, found.blame) == (Stage.SCHEDULE, "SCH-1", "scheduler"), found
    assert "'add1' reads its result" in found.explanation
