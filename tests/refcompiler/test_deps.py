"""``deps``: memory edges, SCH-1, and a self-save (a save of a placeholder's own
value into it), which writes nothing and so orders nothing."""

from __future__ import annotations

import pytest

from specs import OpKind

from refcompiler.deps import check_schedule, dependency_graph, is_legal, memory_edges
from refcompiler.driver import compile_graph, run_compiled
from refcompiler.errors import InvariantViolation
from refcompiler.graph import StorageKind
from refcompiler.ir_verifier import verify_program
from refcompiler.passes import PIPELINES
from refcompiler.proofs import conflicts, prove
from refcompiler.proofs.proof import Verdict
from refcompiler.reference import run_reference
from refcompiler.values import same_bits
from tests.refcompiler.proofs.graphs import graph, node, save, storage

P = StorageKind.PLACEHOLDER


def _self_save(through_view: bool):  # type: ignore[no-untyped-def]
    """``s`` saves P's own value into P (directly or through the view ``v``);
    ``r`` reads P (also through ``v``) and its result is saved into Q."""
    value = "v" if through_view else "P"
    nodes = [node("v", OpKind.RESHAPE, "P", shape=[4])] if through_view else []
    nodes += [save("s", value, "P"), node("r", OpKind.RELU, value), save("q", "r", "Q")]
    return graph("self", [storage("P", P), storage("Q", P)], nodes)


def test_a_real_save_orders_its_readers_first() -> None:
    g = graph("g", [storage("P", P), storage("Q", P)], [save("s", "Q", "P"), node("r", OpKind.RELU, "P")])
    assert memory_edges(g) == [("r", "s", "P")]
    with pytest.raises(InvariantViolation) as e:
        check_schedule(g, ["s", "r"])
    assert e.value.invariant == "SCH-1"
    assert e.value.names == ("r", "s")


@pytest.mark.parametrize("through_view", [False, True])
def test_a_self_save_creates_no_memory_edge_and_no_conflict(through_view: bool) -> None:
    g = _self_save(through_view)
    assert memory_edges(g) == []
    assert all(d["kind"] == "data" for _, _, d in dependency_graph(g).edges(data=True))
    assert [c for c in conflicts(g) if "s" in (c.a, c.b)] == []
    assert prove(g).verdict is Verdict.PROVED


@pytest.mark.parametrize("through_view", [False, True])
def test_a_reader_after_a_self_save_is_legal_and_every_pipeline_equals_the_reference(through_view: bool) -> None:
    g = _self_save(through_view)
    order = (["v"] if through_view else []) + ["s", "r", "q"]
    assert is_legal(g, order)
    expected = run_reference(g, runs=2)
    for pipeline in PIPELINES:
        compiled = compile_graph(g, schedule=order, pipeline=pipeline)
        verify_program(compiled.program)  # IR-4: lowering emits no write for the self-save
        got = run_compiled(compiled, runs=2)
        assert set(got) == set(expected)
        assert all(same_bits(got[k], expected[k]) for k in expected), pipeline


def test_a_schedule_that_is_no_permutation_is_named_in_a_short_line() -> None:
    """A user's scheduler may return any list: its names are counted in
    linear time (a quadratic count took minutes on 2,000,000) and at most ten
    of each kind are listed; a list longer than the graph is refused before
    its names are read."""
    from refcompiler.schedulers import order_names

    g = _self_save(False)
    names = [n.name for n in g.nodes]
    junk = [f"x{k % 50}" for k in range(200_000)] + names
    with pytest.raises(InvariantViolation) as info:
        check_schedule(g, junk)
    text = str(info.value)
    assert text.count("\n") == 0 and "unknown: " in text and "and 40 more" in text and "repeated: " in text and len(text) < 600
    with pytest.raises(InvariantViolation, match=rf"the schedule lists 200{len(names):03d} names; the graph has {len(names)} nodes"):
        order_names(junk, len(names))
    assert order_names(names, len(names)) == tuple(names)


@pytest.mark.parametrize(
    "edges",
    [[], [("a", "b")], [("a", "b"), ("b", "c"), ("a", "c")], [("a", "b"), ("b", "a")], [("a", "a")], [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")]],
)
def test_is_acyclic_is_networkx_s_answer(edges: list[tuple[str, str]]) -> None:
    import networkx as nx

    from refcompiler.deps import is_acyclic

    g = nx.DiGraph(edges)
    g.add_node("lone")
    assert is_acyclic(g) == nx.is_directed_acyclic_graph(g)


def test_save_cycles_broken_makes_each_model_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a save cycle: the graph itself and the one model made to look for
    a cycle; with one: the graph with copies and its model, made once more (not
    twice: the cyclic model is not made again to decide)."""
    import networkx as nx

    import refcompiler.deps as deps

    acyclic = graph("g", [storage("P", P), storage("Q", P)], [save("s", "Q", "P"), node("r", OpKind.RELU, "P")])
    cyclic = graph("c", [storage("A", P), storage("B", P)], [save("a_gets_b", "B", "A"), save("b_gets_a", "A", "B")])
    real = deps.dependency_graph
    for g, made in ((acyclic, 1), (cyclic, 2)):
        calls: list[object] = []
        monkeypatch.setattr(deps, "dependency_graph", lambda x: calls.append(x) or real(x))
        got, model = deps.save_cycles_broken(g)
        monkeypatch.undo()
        assert len(calls) == made and calls[-1] is got
        assert got == deps.break_save_cycles(g) and (got is g) == (made == 1)
        assert list(model.edges(data=True)) == list(real(got).edges(data=True)) and nx.is_directed_acyclic_graph(model)


def test_a_dependency_graph_is_no_reference_cycle_once_its_views_are_asked_for():
    """networkx keeps the edge and degree views it makes on the graph, and they
    refer back to it: each dependency graph was left to the cyclic collector."""
    import gc
    import weakref
    from pathlib import Path

    from refcompiler.deps import DependencyGraph, deps_edges, is_acyclic
    from refcompiler.graph_json import load_graph

    graph = load_graph(Path(__file__).resolve().parents[2] / "examples" / "read_then_save.json")
    deps = dependency_graph(graph)
    assert isinstance(deps, DependencyGraph)
    edges = deps_edges(deps)
    assert edges and list(deps.edges) == list(edges) and is_acyclic(deps)
    assert dict(deps.in_degree) and dict(deps.out_degree) and dict(deps.degree) and list(deps.in_edges)
    gone = weakref.ref(deps)
    enabled = gc.isenabled()
    gc.disable()
    try:
        del deps
        assert gone() is None
    finally:
        if enabled:
            gc.enable()
