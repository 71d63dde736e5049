"""Operand recipes are derived from the spec table."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specs import OPS, AttrKind, AttrSpec, OpKind

from fuzz.strategies.recipes import BINARY, BUILDERS, SPECIAL, UNARY, recipe_for


def test_plain_elementwise_ops_get_a_generic_recipe():
    for kind in (OpKind.ADD, OpKind.ADD_SUB, OpKind.RELU, OpKind.IDENTITY):
        assert kind not in SPECIAL
    assert BUILDERS[OpKind.ADD] is BUILDERS[OpKind.ADD_SUB]
    assert BUILDERS[OpKind.RELU] is not BUILDERS[OpKind.IDENTITY]  # identity takes any dtype
    assert UNARY == (OpKind.RELU, OpKind.NEG, OpKind.TANH, OpKind.EXP, OpKind.IDENTITY)
    assert BINARY == (OpKind.ADD, OpKind.SUB, OpKind.MUL, OpKind.MAX)


def test_an_op_no_recipe_fits_is_named():
    # an elementwise op with an attribute needs a recipe of its own
    odd = replace(OPS[OpKind.NEG], attrs=(AttrSpec("alpha", AttrKind.FLOAT, 1.0),))
    with pytest.raises(LookupError, match="'neg'"):
        recipe_for(odd)


def _int32_maxima(graph) -> list[str]:  # type: ignore[no-untyped-def]
    from specs import Dtype
    from refcompiler.verifier import infer_types

    types = infer_types(graph)
    return [n.name for n in graph.nodes if n.op is OpKind.MAX and types[(n.name, 0)].dtype is Dtype.INT32]


def test_graphs_sometimes_take_the_max_of_int32_values_that_stay_valid_ids():
    """max also takes int32 x int32 (the spec's uniform_dtypes): the generic binary
    recipe draws such operands, with values bounded so that an embedding table fed
    by the max still sees ids in range."""
    from hypothesis import find, settings

    from refcompiler.reference import run_reference
    from refcompiler.verifier import verify

    from fuzz.strategies import graphs

    ops = [OpKind.MAX, OpKind.EMBEDDING_UPDATE, OpKind.SAVE]
    # every op on (no swarm) and room for a max before its table: about 1 graph in 170
    graph = find(
        graphs(ops=ops, max_nodes=8, swarm=False),
        lambda g: bool(_int32_maxima(g)) and any(n.op is OpKind.EMBEDDING_UPDATE and n.inputs[0].name in _int32_maxima(g) for n in g.nodes),
        settings=settings(max_examples=2000, database=None),
    )
    verify(graph)
    run_reference(graph, runs=2)  # an id out of range would raise
