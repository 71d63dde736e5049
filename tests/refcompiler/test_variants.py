"""Swap points: a replacement applies inside its ``installed`` block, in its own context only."""

from __future__ import annotations

import threading

from specs import OPS, OpKind

from refcompiler import variants
from refcompiler.graph import Node
from refcompiler.spec import spec_of


@variants.swappable
def _answer() -> str:
    return "right"


def test_a_replacement_applies_inside_its_block_only() -> None:
    assert variants.installing == 0 and _answer() == "right"
    with variants.installed({_answer: lambda: "wrong"}):
        assert variants.installing == 1 and _answer() == "wrong"
        with variants.installed({}):
            assert variants.installing == 2 and _answer() == "wrong"  # an inner block keeps the outer's
    assert variants.installing == 0 and _answer() == "right"


def test_another_thread_sees_no_replacement_while_one_is_installed_here() -> None:
    """``installing`` counts blocks in every thread; each still reads its own table."""
    seen: list[str] = []
    inside, done = threading.Event(), threading.Event()

    def other() -> None:
        inside.wait()
        seen.append(_answer())
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with variants.installed({_answer: lambda: "wrong"}):
        inside.set()
        done.wait()
        assert _answer() == "wrong"
    thread.join()
    assert seen == ["right"]


def test_node_spec_follows_a_replaced_op_table() -> None:
    node = Node("a", OpKind.ADD)
    other = OPS[OpKind.MUL]
    assert node.spec is OPS[OpKind.ADD]
    with variants.installed({spec_of: lambda kind: other}):
        assert node.spec is other
    assert node.spec is OPS[OpKind.ADD]
