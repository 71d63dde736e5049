"""Graph dead-code elimination: unused pure nodes go, effects stay."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given

from specs import Dtype, OpKind

from refcompiler.driver import compile_graph, run_compiled
from refcompiler.graph import Graph, Node, Ref, Storage, StorageKind, freeze_attrs
from refcompiler.graph_json import load_graph
from refcompiler.graph_passes.dce import dce, has_effect
from refcompiler.reference import run_reference
from refcompiler.values import same_bits
from refcompiler.variants import installed
from refcompiler.verifier import verify
from tests.refcompiler.local_graphs import graphs

ROOT = Path(__file__).resolve().parents[2]
F32 = Dtype.FLOAT32


def node(name: str, op: OpKind, *inputs: str, state: tuple[str, ...] = (), **attrs: object) -> Node:
    return Node(name, op, tuple(Ref.parse(x) for x in inputs), state, freeze_attrs(attrs))


def storage(name: str, kind: StorageKind, *shape: int, owner: str | None = None) -> Storage:
    return Storage(name, kind, F32, shape, owner=owner)


GRAPH = Graph(
    "dce",
    storage=(
        storage("P", StorageKind.PLACEHOLDER, 4),
        storage("out", StorageKind.PLACEHOLDER, 4),
        storage("acc", StorageKind.OWNED, 4, owner="running"),
    ),
    nodes=(
        node("a", OpKind.RELU, "P"),
        node("b", OpKind.NEG, "a"),  # only c reads b, and nothing reads c
        node("c", OpKind.TANH, "b"),
        node("kept", OpKind.EXP, "P"),
        node("running", OpKind.ACCUMULATE, "kept", state=("acc",)),  # its result is unused
        node("s", OpKind.SAVE, "a", target="out"),
    ),
)


def test_drops_unused_chains_to_a_fixpoint() -> None:
    verify(GRAPH)
    out = dce(GRAPH)
    assert [n.name for n in out.nodes] == ["a", "kept", "running", "s"]
    assert out.storage == GRAPH.storage
    verify(out)


def test_keeps_a_graph_without_dead_nodes_as_it_is() -> None:
    graph = dce(GRAPH)
    assert dce(graph) is graph


def test_has_effect() -> None:
    by_name = GRAPH.node_by_name
    assert has_effect(by_name["s"])
    assert has_effect(by_name["running"])
    assert not any(has_effect(by_name[n]) for n in ("a", "b", "c", "kept"))
    for path in ROOT.glob("examples/*.json"):
        for n in load_graph(path).nodes:
            assert has_effect(n) == (n.op is OpKind.SAVE or bool(n.state))


@given(graphs())
def test_dce_keeps_meaning(graph: Graph) -> None:
    out = dce(graph)
    verify(out)
    assert {n.name for n in graph.nodes if has_effect(n)} <= {n.name for n in out.nodes}
    want, got = run_reference(graph, runs=2), run_reference(out, runs=2)
    assert all(same_bits(got[k], want[k]) for k in want)


def test_dropping_an_owner_is_caught_by_the_differential() -> None:
    # a dce that thinks only saves have effects drops `running`: its state is
    # then never updated, which the comparison with the reference shows
    def saves_only(n: Node) -> bool:
        return n.op is OpKind.SAVE

    reference = run_reference(GRAPH, runs=2)
    with installed({has_effect: saves_only}):
        compiled = compile_graph(GRAPH)
    assert "running" not in compiled.schedule
    got = run_compiled(compiled, runs=2)
    assert not same_bits(got["acc"], reference["acc"])
    assert same_bits(got["out"], reference["out"])


def test_the_last_result_is_remembered_per_swap_table() -> None:
    out = dce(GRAPH)
    assert dce(GRAPH) is out  # asked again: the same object
    with installed({has_effect: lambda n: n.op is OpKind.SAVE}):
        assert [n.name for n in dce(GRAPH).nodes] == ["a", "s"]  # not the correct compiler's result
    assert dce(GRAPH) == out
