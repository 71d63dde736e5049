"""``effects``: a node's reads and writes, and the table of recent results
``node_effects`` keeps per graph object and swap table."""

from __future__ import annotations

from dataclasses import replace

from specs import OPS, OpKind

from refcompiler.effects import RECENT, node_effects
from refcompiler.graph import StorageKind
from refcompiler.spec import spec_of
from refcompiler.variants import installed
from tests.refcompiler.proofs.graphs import graph, node, save, storage

P = StorageKind.PLACEHOLDER


def _viewed(name: str):  # type: ignore[no-untyped-def]
    """``r`` reads P through the view ``v``; ``s`` saves its result into Q."""
    nodes = [node("v", OpKind.RESHAPE, "P", shape=[4]), node("r", OpKind.RELU, "v"), save("s", "r", "Q")]
    return graph(name, [storage("P", P), storage("Q", P)], nodes)


def test_a_reader_through_a_view_reads_the_storage_and_a_save_writes_its_target() -> None:
    effects = node_effects(_viewed("g"))
    assert effects["r"].reads == {"P"} and effects["r"].writes == frozenset()
    assert effects["s"].writes == {"Q"}


def test_effects_are_kept_per_graph_object_and_swap_table_and_emptied_when_full() -> None:
    g = _viewed("g")
    first = node_effects(g)
    assert node_effects(g) is first  # asked again: the same object
    assert node_effects(_viewed("g")) is not first  # an equal graph is another object
    not_a_view = {spec_of: lambda kind: replace(OPS[kind], view=False) if kind is OpKind.RESHAPE else OPS[kind]}
    with installed(not_a_view):
        assert node_effects(g)["r"].reads == frozenset()  # not the correct compiler's answer
    assert node_effects(g)["r"].reads == {"P"}
    kept = [_viewed(f"other{k}") for k in range(RECENT)]
    for other in kept:
        node_effects(other)
    again = node_effects(g)
    assert again is not first and again == first
