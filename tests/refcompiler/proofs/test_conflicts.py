"""``conflicts``: every pair that touches one storage with at least one write."""

from __future__ import annotations

from pathlib import Path

from specs import OpKind

from refcompiler.graph import StorageKind
from refcompiler.graph_json import load_graph
from refcompiler.proofs import Conflict, conflicts
from refcompiler.proofs.conflicts import prepare
from tests.refcompiler.proofs.graphs import graph, node, save, storage

ROOT = Path(__file__).resolve().parents[3]
P, C = StorageKind.PLACEHOLDER, StorageKind.CONSTANT


def test_a_save_conflicts_with_each_reader_of_its_placeholder():
    g = load_graph(ROOT / "examples" / "read_then_save.json")
    assert conflicts(g) == [Conflict("sum", "s", "A"), Conflict("s", "late", "A")]


def test_pairs_are_in_creation_order_even_when_the_writer_comes_first():
    g = graph("g", [storage("A", P), storage("B", P)], [save("s", "B", "A"), node("r", OpKind.RELU, "A")])
    assert conflicts(g) == [Conflict("s", "r", "A")]


def test_readers_through_views_conflict_and_pure_readers_do_not_conflict_with_each_other():
    g = graph(
        "g",
        [storage("A", P), storage("B", P)],
        [node("v", OpKind.RESHAPE, "A", shape=[4]), node("w", OpKind.RELU, "v"), node("x", OpKind.RELU, "A"), save("s", "B", "A")],
    )
    # 'w' reads A through the view 'v'; readers never conflict with each other
    assert conflicts(g) == [Conflict("v", "s", "A"), Conflict("w", "s", "A"), Conflict("x", "s", "A")]


def test_owned_state_conflicts_only_with_foreign_users():
    stores = [storage("X", P), storage("acc", StorageKind.OWNED, owner="own")]
    valid = graph("g", stores, [node("own", OpKind.ACCUMULATE, "X", state=("acc",))])
    assert conflicts(valid) == []
    foreign = graph("g", stores, [*valid.nodes, node("peek", OpKind.RELU, "acc")])
    assert conflicts(foreign) == [Conflict("own", "peek", "acc")]


def test_two_saves_and_a_save_into_a_constant():
    two = graph("g", [storage("A", P), storage("B", P)], [save("s1", "B", "A"), save("s2", "B", "A")])
    assert conflicts(two) == [Conflict("s1", "s2", "A")]
    into_constant = graph("g", [storage("A", P), storage("W", C)], [node("r", OpKind.RELU, "W"), save("s", "A", "W")])
    assert conflicts(into_constant) == [Conflict("r", "s", "W")]


def test_one_conflict_per_shared_storage():
    g = graph(
        "g",
        [storage("A", P), storage("B", P), storage("X", P)],
        [node("r", OpKind.ADD, "A", "B"), node("q", OpKind.QUANTIZATION_PROFILE, "X", state=("A", "B"))],
    )
    assert conflicts(g) == [Conflict("r", "q", "A"), Conflict("r", "q", "B")]
    assert prepare(g).pairs == (("r", "q"),)


def test_a_node_never_conflicts_with_itself():
    # a save of its own target reads and writes A; an owner reads and writes its state
    g = graph("g", [storage("A", P)], [save("s", "A", "A")])
    assert conflicts(g) == []


def test_names_that_are_no_storage_touch_nothing():
    # built directly (the loader would refuse it): a state operand and a save target naming nothing
    g = graph(
        "g",
        [storage("A", P)],
        [node("o", OpKind.ACCUMULATE, "A", state=("ghost",)), save("s", "o", "ghost"), node("r", OpKind.RELU, "A")],
    )
    assert conflicts(g) == []


def _graphs():
    found = sorted((ROOT / "examples").glob("*.json")) + sorted((ROOT / "tests" / "data" / "prove").glob("*.json"))
    out = []
    for p in found:
        try:
            out.append(load_graph(p))
        except Exception:  # not a graph file of this format: not what this test is about
            pass
    return out


def test_the_problem_is_the_graph_after_break_save_cycles_and_its_model(monkeypatch):
    import importlib

    import networkx as nx

    from refcompiler.errors import InvariantViolation
    from refcompiler.proofs.conflicts import legal_dependency_graph

    dependencies, module = importlib.import_module("refcompiler.deps"), importlib.import_module("refcompiler.proofs.conflicts")

    graphs = _graphs()
    assert any(not nx.is_directed_acyclic_graph(dependencies.dependency_graph(g)) for g in graphs)  # a save cycle among them
    for g in graphs:
        try:
            want_graph = dependencies.break_save_cycles(g)
            want_deps = legal_dependency_graph(want_graph)
        except InvariantViolation:
            continue
        calls = []
        real = dependencies.dependency_graph
        for where in (module, dependencies):  # break_save_cycles makes one with its module's
            monkeypatch.setattr(where, "dependency_graph", lambda x: calls.append(x) or real(x))
        dependencies._broken.entries.clear()  # as if this graph had not been asked about (break_save_cycles above)
        problem = prepare(g)
        monkeypatch.undo()
        assert problem.graph == want_graph
        assert list(problem.deps.nodes) == list(want_deps.nodes) and list(problem.deps.edges(data=True)) == list(want_deps.edges(data=True))
        assert problem.conflicts == tuple(conflicts(want_graph))
        if want_graph is g:
            assert problem.graph is g and len(calls) == 1  # the model is made once
