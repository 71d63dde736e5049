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
