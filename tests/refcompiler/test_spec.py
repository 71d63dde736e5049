"""``spec_of`` and ``specs_of``: the op table behind its swap point, asked once per op kind per walk."""

from __future__ import annotations

from dataclasses import replace

from specs import OpKind, op_spec

from refcompiler import spec
from refcompiler.graph import Node, Ref
from refcompiler.variants import installed

NODES = [Node("a", OpKind.ROLL, (Ref("x"),)), Node("b", OpKind.ADD), Node("c", OpKind.ROLL, (Ref("a"),))]


def test_specs_of_asks_spec_of_once_per_kind_and_follows_the_installed_swap():
    asked = []

    def in_place_roll(kind):
        asked.append(kind)
        entry = spec.spec_of.original(kind)
        return replace(entry, inplace=(("x",),)) if kind is OpKind.ROLL else entry

    with installed({spec.spec_of: in_place_roll}):
        found = spec.specs_of(NODES)
        assert asked == [OpKind.ROLL, OpKind.ADD]
        assert [s.inplace for s in found] == [(("x",),), op_spec(OpKind.ADD).inplace, (("x",),)]
        assert NODES[0].spec.inplace == (("x",),)  # Node.spec goes through the swap point too
    assert spec.specs_of(NODES) == [op_spec(OpKind.ROLL), op_spec(OpKind.ADD), op_spec(OpKind.ROLL)]
    assert NODES[0].spec is op_spec(OpKind.ROLL)  # the swap ends with its block
