"""The printer's pieces: init descriptions, zero-dimensional and invalid graphs."""

from __future__ import annotations

import pytest

from specs import Dtype, OpKind

from refcompiler.errors import InternalError
from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind
from refcompiler.printer import OP_SYMBOLS, graph_text, init_text, op_symbol


def storage(init: Init | None, dtype: Dtype = Dtype.FLOAT32, shape: tuple[int, ...] = (3,)) -> Storage:
    return Storage("s", StorageKind.PLACEHOLDER, dtype, shape, init=init)


@pytest.mark.parametrize(
    "init, dtype, text",
    [
        (None, Dtype.FLOAT32, "zeros"),
        (Init(seed=3), Dtype.FLOAT32, "seed 3"),
        (Init(seed=4, low=-1, high=6), Dtype.INT32, "seed 4 in [-1, 6)"),
        (Init(value=(1.0, -2.5, 3.0)), Dtype.FLOAT32, "value [1.0, -2.5, 3.0]"),
        (Init(value=tuple(range(8))), Dtype.INT32, "value [0, 1, 2, 3, 4, 5, ... (8 values)]"),
    ],
)
def test_init_text(init, dtype, text):
    assert init_text(storage(init, dtype, (len(init.value),) if init and init.value else (3,))) == text


def test_text_of_a_graph_without_nodes_or_with_a_cycle():
    empty = Graph(name="empty", storage=(storage(None),))
    assert graph_text(empty).splitlines()[-2:] == ["nodes:", "  (none)"]
    cyclic = Graph(name="c", storage=(storage(None),), nodes=(
        Node("p", OpKind.ADD, (Ref("s"), Ref("q"))), Node("q", OpKind.NEG, (Ref("p"),))))
    text = graph_text(cyclic)
    # no types for an invalid graph, and the violation is listed
    assert "  p = add(s, q)\n" in text and "G-1: the data graph has a cycle" in text


def test_a_missing_printer_entry_is_an_internal_error(monkeypatch):
    monkeypatch.delitem(OP_SYMBOLS, OpKind.ROLL)
    with pytest.raises(InternalError, match="no entry for op 'roll'"):
        op_symbol(OpKind.ROLL)
