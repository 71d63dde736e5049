"""The values the generator gives its storage: int32 ids where they reach an
index input (the spec's ``index_inputs``), wide int32 values elsewhere, and
now and then float32 values with exact ties and signed zeros; both backends
draw them alike, and a compiler wrong only on such values is found."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import find, settings

from specs import OPS, Dtype, OpKind

from refcompiler.graph import Graph, Ref, StorageKind, initial_value
from refcompiler.graph_json import graph_from_doc, graph_to_doc
from refcompiler import kernels
from refcompiler.reference import run_reference
from refcompiler.verifier import infer_types

from fuzz.shrink import reduce_graph
from fuzz.strategies import graphs
from fuzz.strategies.builder import TIES
from fuzz.strategies.draws import RandomDraws, replayed
from fuzz.strategies.valid import build_graph

N = 600


@pytest.fixture(scope="module")
def drawn() -> list[tuple[Graph, list]]:
    out = []
    for k in range(N):
        d = RandomDraws(random.Random(1000 + k))
        out.append((build_graph(d), d.choices))
    return out


def _int_ranges(graph: Graph) -> dict[Ref, tuple[int, int]]:
    """The [low, high) of every int32 value, from the storage's seeds: an op
    on int32 values moves them or picks one of them (the spec table has no
    int32 arithmetic), so a result's range holds its inputs' ranges."""
    types = infer_types(graph)
    ranges: dict[Ref, tuple[int, int]] = {}
    for s in graph.storage:
        if s.dtype is Dtype.INT32:
            v = initial_value(s)
            ranges[Ref(s.name)] = (int(v.min()), int(v.max()) + 1) if v.size else (0, 1)
    for n in graph.nodes:
        ins = [ranges[r] for r in n.inputs if r in ranges]
        for k in range(len(n.spec.results)):
            if ins and types[(n.name, k)].dtype is Dtype.INT32:
                ranges[Ref(n.name, k if len(n.spec.results) > 1 else None)] = (min(r[0] for r in ins), max(r[1] for r in ins))
    return ranges


def _wide(graph: Graph) -> set[str]:
    """Which of negative, large (above 2**30) int32 values the graph's storage holds."""
    out = set()
    for s in graph.storage:
        if s.dtype is Dtype.INT32 and s.init is not None:
            out |= {"negative"} if s.init.low < 0 else set()
            out |= {"large"} if s.init.high > 2**30 else set()
    return out


def _ties(graph: Graph) -> bool:
    return any(s.dtype is Dtype.FLOAT32 and s.init is not None and s.init.value is not None for s in graph.storage)


def test_index_inputs_are_read_from_the_spec_table():
    assert {k: s.index_inputs for k, s in OPS.items() if s.index_inputs} == {OpKind.EMBEDDING_UPDATE: ("ids",)}
    assert OPS[OpKind.EMBEDDING_UPDATE].index_positions() == (0,)


def test_int32_values_are_wide_except_where_they_reach_an_index_input(drawn):
    wide = {"negative": 0, "large": 0}
    maxima_of_wide = 0
    for graph, _ in drawn:
        for w in _wide(graph):
            wide[w] += 1
        ranges = _int_ranges(graph)
        for n in graph.nodes:
            for i in n.spec.index_positions():
                low, high = ranges[n.inputs[i]]
                rows = graph.storage_by_name[n.state[0]].shape[0]
                assert 0 <= low and high <= rows, (n.name, low, high, rows)
            if n.op is OpKind.MAX and any(r in ranges and ranges[r][0] < 0 for r in n.inputs):
                maxima_of_wide += 1
        run_reference(graph, runs=2)  # an id out of range would raise
    # int32 values are a small part of the graphs (an int32 max, embedding ids)
    assert wide["negative"] >= N // 100 and wide["large"] >= N // 200, wide
    assert maxima_of_wide >= N // 100, maxima_of_wide


def test_float_values_have_ties_and_signed_zeros_in_a_small_share_of_graphs(drawn):
    tied = [g for g, _ in drawn if _ties(g)]
    assert N // 20 <= len(tied) <= N // 5, len(tied)
    signs = set()
    for g in tied:
        for s in g.storage:
            if s.dtype is Dtype.FLOAT32 and s.init is not None and s.init.value is not None:
                v = initial_value(s)
                assert set(v.ravel().tolist()) <= set(TIES)
                signs |= {bool(b) for b in np.signbit(v[v == 0])}
    assert signs == {False, True}
    # the others keep standard-normal seeds (the graph file's {seed} init)
    others = [s for g, _ in drawn if not _ties(g) for s in g.storage if s.dtype is Dtype.FLOAT32 and s.init is not None]
    assert others and all(s.init.value is None for s in others)


def test_signed_zeros_survive_the_graph_file(drawn):
    def negative_zeros(g: Graph) -> list[str]:
        return [s.name for s in g.storage if s.dtype is Dtype.FLOAT32 and np.signbit(initial_value(s)[initial_value(s) == 0]).any()]

    g = next(g for g, _ in drawn if negative_zeros(g))
    again = graph_from_doc(json.loads(json.dumps(graph_to_doc(g))))
    for s in g.storage:
        assert initial_value(s).tobytes() == initial_value(again.storage_by_name[s.name]).tobytes()


def test_both_backends_draw_wide_ints_and_ties_alike(drawn):
    # the same choices replay to the same graph through Hypothesis, signs of
    # zero included (0.0 == -0.0: compare the files)
    picked = [(g, c) for g, c in drawn if _ties(g)][:8] + [(g, c) for g, c in drawn if _wide(g)][:8]
    assert len(picked) == 16
    for graph, choices in picked:
        again = replayed(graphs(), choices)
        assert json.dumps(graph_to_doc(again)) == json.dumps(graph_to_doc(graph))


def test_hypothesis_draws_them_too_and_shrinks_to_them():
    def negative_max(g: Graph) -> bool:
        ranges = _int_ranges(g)
        return any(n.op is OpKind.MAX and any(r in ranges and ranges[r][0] < 0 for r in n.inputs) for n in g.nodes)

    # Hypothesis, then the campaign's graph-level reducer (fuzz.shrink), as a campaign shrinks
    for ops, wanted in (([OpKind.MAX, OpKind.SAVE], negative_max), ([OpKind.NEG, OpKind.SAVE], _ties)):
        found = find(graphs(ops=ops), wanted, settings=settings(database=None, max_examples=2000), random=random.Random(0))
        assert len(reduce_graph(found, wanted).nodes) <= 1


# -- compilers wrong only on such values ---------------------------------------------


def _unsigned_max(inputs, state, attrs):  # type: ignore[no-untyped-def]
    a, b = inputs
    if a.dtype == np.int32:
        a, b = np.broadcast_arrays(a, b)
        return (np.maximum(a.view(np.uint32), b.view(np.uint32)).view(np.int32),), ()
    return (np.maximum(a, b),), ()


def _runs_differ(graph: Graph, other: Graph | None = None, patch: dict | None = None) -> bool:  # type: ignore[type-arg]
    want = run_reference(graph, runs=2)
    saved = dict(kernels.KERNELS)
    try:
        kernels.KERNELS.update(patch or {})
        got = run_reference(other or graph, runs=2)
    finally:
        kernels.KERNELS.clear()
        kernels.KERNELS.update(saved)
    return any(not np.array_equal(want[k].view(np.uint32), got[k].view(np.uint32)) for k in want)


def _commuted_max_merged(graph: Graph) -> Graph | None:
    """The graph a common-subexpression elimination that takes float32 max as
    commutative makes: a max(b, a) after a max(a, b) reads that one's result."""
    types = infer_types(graph)
    seen: dict[tuple[Ref, ...], str] = {}
    for n in graph.nodes:
        if n.op is OpKind.MAX and types[(n.name, 0)].dtype is Dtype.FLOAT32:
            earlier = seen.get(n.inputs[::-1])
            if earlier is not None and n.inputs[0] != n.inputs[1]:
                nodes = tuple(replace(m, op=OpKind.IDENTITY, inputs=(Ref(earlier),)) if m is n else m for m in graph.nodes)
                return replace(graph, nodes=nodes)
            seen.setdefault(n.inputs, n.name)
    return None


def test_a_compiler_that_compares_int32_as_unsigned_is_wrong_on_some_graph(drawn):
    # before: int32 values were ids in [0, 4), on which unsigned order is the
    # same (an int32 max with operands of both signs: about one graph in 300)
    wrong = [g for g, _ in drawn if _runs_differ(g, patch={OpKind.MAX: _unsigned_max})]
    assert wrong


def test_a_cse_that_takes_float_max_as_commutative_is_wrong_on_some_graph():
    # twins (Feature.TWINS: op(x, y), op(y, x)) and ties in the operands: about
    # one graph in 700 (never before: no ties, and twins in 1 graph of 3,000)
    wrong = 0
    for k in range(3000):
        g = build_graph(RandomDraws(random.Random(k)))
        merged = _commuted_max_merged(g)
        wrong += merged is not None and _runs_differ(g, merged)
    assert wrong >= 3, wrong


@pytest.mark.parametrize("ints", [(0, 4), (-3, 3)], ids=["ids beyond the rows", "no ids"])
def test_an_index_input_beyond_its_state_s_rows_is_an_internal_error_not_an_assert(ints):
    """The recipe's promise is checked under ``python -O`` too (an assert was)."""
    from refcompiler.errors import InternalError
    from specs import TensorType

    from fuzz.strategies.builder import Builder

    b = Builder(RandomDraws(random.Random(0)), frozenset(), max_nodes=4)
    ids = b.new_storage(TensorType((3,), Dtype.INT32), StorageKind.PLACEHOLDER, ints=ints)
    grad = b.new_storage(TensorType((3, 2), Dtype.FLOAT32), StorageKind.PLACEHOLDER)
    table = b.owned("e", "table", TensorType((2, 2), Dtype.FLOAT32))
    with pytest.raises(InternalError, match=r"generator: e \(embedding_update\): its index input 'p0' holds .* beyond the 2 rows"):
        b.add_node(OpKind.EMBEDDING_UPDATE, [ids, grad], state=(table,), name="e")
    assert b.nodes == []
    fits = b.new_storage(TensorType((3,), Dtype.INT32), StorageKind.PLACEHOLDER, ints=(0, 2))
    assert b.add_node(OpKind.EMBEDDING_UPDATE, [fits, grad], state=(table,), name="e").name == "e"
    with pytest.raises(InternalError, match="storage has at least one dimension"):
        b.new_storage(TensorType((), Dtype.FLOAT32), StorageKind.PLACEHOLDER)
