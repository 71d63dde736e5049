"""The symbolic reference: each node's attributes are found once for the runs of one graph."""

from __future__ import annotations

from pathlib import Path

from refcompiler.graph_json import load_graph
from refcompiler.symbolic.kernels import Context
from refcompiler.symbolic.reference import symbolic_run_once
from refcompiler.symbolic.terms import Terms
from refcompiler.symbolic.validate import _constants, _symbols

ROOT = Path(__file__).resolve().parents[3]


def test_each_nodes_attributes_are_found_once_and_then_read_from_attrs_of():
    graph = load_graph(ROOT / "examples" / "sgd_momentum.json")
    t = Terms()
    symbols, (constants, _) = _symbols(t, graph), _constants(t, graph)
    attrs_of: dict = {}
    first = symbolic_run_once(Context(t), graph, symbols, constants, attrs_of)
    assert set(attrs_of) == {n.name for n in graph.nodes}
    assert dict(attrs_of["step"]) == {"lr": 0.05, "mu": 0.9} and dict(attrs_of["total"])["keepdims"] is False
    again = symbolic_run_once(Context(t), graph, symbols, constants, attrs_of)
    assert all((again[k] == v).all() for k, v in first.items())
    attrs_of["step"] = {"lr": 0.5, "mu": 0.9}  # read from attrs_of, not the node: another step size, other terms
    other = symbolic_run_once(Context(t), graph, symbols, constants, attrs_of)
    assert (other["w"] != first["w"]).any() and (other["v"] == first["v"]).all()
