"""``large_graph``: valid, exactly n nodes, deterministic, and with the hazards."""

from __future__ import annotations

import pytest

from specs import OpKind

from refcompiler.deps import memory_edges
from refcompiler.errors import LimitExceeded, UsageError
from refcompiler.graph import StorageKind
from refcompiler.graph_json import graph_from_doc, graph_to_doc
from refcompiler.proofs.scale import large_graph
from refcompiler.verifier import verify


@pytest.mark.parametrize("n", [1, 2, 3, 10, 57, 400])
def test_large_graphs_are_valid_with_exactly_n_nodes(n):
    g = large_graph(n, seed=n)
    verify(g)
    assert len(g.nodes) == n


def test_large_graphs_are_deterministic_in_n_and_seed():
    assert large_graph(200, seed=4) == large_graph(200, seed=4)
    assert large_graph(200, seed=4) != large_graph(200, seed=5)


def test_a_large_graph_round_trips_through_the_file_format():
    g = large_graph(120)
    assert graph_from_doc(graph_to_doc(g)) == g


def test_large_graphs_have_the_hazards():
    g = large_graph(1000)
    ops = {n.op for n in g.nodes}
    assert {OpKind.SAVE, OpKind.RESHAPE, OpKind.ACCUMULATE, OpKind.QUANTIZATION_PROFILE} <= ops
    assert sum(1 for _ in g.storage_of_kind(StorageKind.OWNED)) >= 40
    saved = {n.target for n in g.saves()}
    readers = {}
    for r, s, p in memory_edges(g):
        readers.setdefault(p, set()).add(r)
    # every saved placeholder is also read, on average by several nodes
    assert saved == set(readers)
    assert sum(len(r) for r in readers.values()) / len(readers) >= 3


def test_a_graph_needs_a_node():
    with pytest.raises(UsageError):
        large_graph(0)


def test_a_graph_beyond_the_node_limit_is_refused_before_it_is_built(monkeypatch):
    # refc bench --proofs --sizes 1000000000 grew to 14 GB building it
    monkeypatch.setenv("REFC_MAX_NODES", "100")
    with pytest.raises(LimitExceeded, match="a generated graph of 101 nodes: needs 101 nodes"):
        large_graph(101)
    assert len(large_graph(100).nodes) == 100
