"""refc op -> ONNX nodes: one lowering per op kind, in ``LOWERINGS``.

A lowering gets an ``Emitter`` and a ``Site``: the node, the ONNX names of its
inputs, state, results and new state (``state_out``), and their types. It
writes ONNX nodes that compute exactly what refc's kernel does, in the same
float32 (or float64, for the histogram) operations in the same order, so that
an ONNX evaluator that computes as numpy does gives the same bits. Owned state
is an input and its new value an output: an owner's update is a pure function
from the old state to the new.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from onnx import AttributeProto, NodeProto, TensorProto, helper, numpy_helper

from specs import OpKind, TensorType

from refcompiler.graph import Node
from refcompiler.onnx_io.types import Namer

__all__ = ["Emitter", "Site", "LOWERINGS"]


class Emitter:
    """The ONNX nodes and initializers of the model being written."""

    def __init__(self, namer: Namer):
        self.namer = namer
        self.nodes: list[NodeProto] = []
        self.initializers: list[TensorProto] = []

    def node(self, op_type: str, inputs: list[str], out: str | None = None, **attrs: object) -> str:
        """One ONNX node with one output (``out``, or a fresh name); that output's name."""
        name = out or self.namer.fresh(op_type.lower())
        empty = {k for k, v in attrs.items() if isinstance(v, list) and not v}  # onnx cannot infer their type
        node = helper.make_node(op_type, inputs, [name], name=self.namer.fresh(f"{name}.{op_type}"), **{k: v for k, v in attrs.items() if k not in empty})
        node.attribute.extend(helper.make_attribute(k, [], attr_type=AttributeProto.INTS) for k in sorted(empty))  # refc's lists are of ints
        self.nodes.append(node)
        return name

    def const(self, array: np.ndarray, hint: str) -> str:
        name = self.namer.fresh(hint)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name


@dataclass(frozen=True)
class Site:
    node: Node
    ins: list[str]
    in_types: list[TensorType]
    state: list[str]
    state_types: list[TensorType]
    results: list[str]
    state_out: list[str]


Lowering = Callable[[Emitter, Site], None]


def _same(op_type: str) -> Lowering:
    def lower(e: Emitter, s: Site) -> None:
        e.node(op_type, s.ins, s.results[0])

    return lower


def _i64(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _transpose(e: Emitter, s: Site) -> None:
    perm = s.node.attr("perm")
    e.node("Transpose", s.ins, s.results[0], **({} if perm is None else {"perm": list(perm)}))  # type: ignore[call-overload]


def _reduce_sum(e: Emitter, s: Site) -> None:
    axis, keep = s.node.attr("axis"), int(bool(s.node.attr("keepdims")))
    if axis is None:  # every axis: ReduceSum with no axes input reduces all
        e.node("ReduceSum", s.ins, s.results[0], keepdims=keep)
        return
    axes = [axis] if isinstance(axis, int) else list(axis)  # type: ignore[call-overload]
    e.node("ReduceSum", [s.ins[0], e.const(_i64(axes), "axes")], s.results[0], keepdims=keep)


def _concat(e: Emitter, s: Site) -> None:
    e.node("Concat", s.ins, s.results[0], axis=int(s.node.attr("axis")))  # type: ignore[call-overload]


def _roll(e: Emitter, s: Site) -> None:
    """np.roll(x, 1, axis=0): the last row, then all rows but the last."""
    if s.in_types[0].shape[0] == 1:
        e.node("Identity", s.ins, s.results[0])
        return
    x, axes = s.ins[0], e.const(_i64([0]), "axes")
    last = e.node("Slice", [x, e.const(_i64([-1]), "starts"), e.const(_i64([np.iinfo(np.int64).max]), "ends"), axes])
    rest = e.node("Slice", [x, e.const(_i64([0]), "starts"), e.const(_i64([-1]), "ends"), axes])
    e.node("Concat", [last, rest], s.results[0], axis=0)


def _reshape(e: Emitter, s: Site) -> None:
    e.node("Reshape", [s.ins[0], e.const(_i64(list(s.node.attr("shape"))), "shape")], s.results[0])  # type: ignore[call-overload]


def _add_sub(e: Emitter, s: Site) -> None:
    e.node("Add", s.ins, s.results[0])
    e.node("Sub", s.ins, s.results[1])


def _sgd_momentum(e: Emitter, s: Site) -> None:
    """v_new = mu*v + g; w_new = w - lr*v_new, in float32 as the kernel computes."""
    w, g, v = s.ins
    mu = e.const(np.float32(s.node.attr("mu")), "mu")  # type: ignore[arg-type]
    lr = e.const(np.float32(s.node.attr("lr")), "lr")  # type: ignore[arg-type]
    v_new = e.node("Add", [e.node("Mul", [mu, v]), g], s.results[1])
    e.node("Sub", [w, e.node("Mul", [lr, v_new])], s.results[0])


def _quantization_profile(e: Emitter, s: Site) -> None:
    """minmax = [min(old, x.min()), max(old, x.max())]; hist += counts of the bins
    floor((x - lo) * k / (hi - lo)) in float64, NaN to bin 0, clipped to [0, k-1],
    counted with ScatterND(reduction='add') into zeros, then added in float32."""
    (x,), (minmax, hist) = s.ins, s.state
    k, n = s.state_types[1].shape[0], s.in_types[0].size
    lo, hi = float(s.node.attr("lo")), float(s.node.attr("hi"))  # type: ignore[arg-type]
    old_lo = e.node("Slice", [minmax, e.const(_i64([0]), "starts"), e.const(_i64([1]), "ends")])
    old_hi = e.node("Slice", [minmax, e.const(_i64([1]), "starts"), e.const(_i64([2]), "ends")])
    new_lo = e.node("Min", [old_lo, e.node("ReduceMin", [x], keepdims=0)])
    new_hi = e.node("Max", [old_hi, e.node("ReduceMax", [x], keepdims=0)])
    e.node("Concat", [new_lo, new_hi], s.state_out[0], axis=0)
    shifted = e.node("Sub", [e.node("Cast", [x], to=TensorProto.DOUBLE), e.const(np.float64(lo), "lo")])
    t = e.node("Floor", [e.node("Mul", [shifted, e.const(np.float64(k / (hi - lo)), "scale")])])
    zero = e.const(np.float64(0.0), "zero")
    t = e.node("Where", [e.node("IsNaN", [t]), zero, t])  # NaN lands in bin 0, as the kernel says
    t = e.node("Clip", [t, zero, e.const(np.float64(k - 1), "last_bin")])
    bins = e.node("Reshape", [e.node("Cast", [t], to=TensorProto.INT64), e.const(_i64([n, 1]), "shape")])
    ones, zeros = e.const(np.ones(n, np.float32), "ones"), e.const(np.zeros(k, np.float32), "zeros")
    counts = e.node("ScatterND", [zeros, bins, ones], reduction="add")
    e.node("Add", [hist, counts], s.state_out[1])


def _embedding_update(e: Emitter, s: Site) -> None:
    """rows = table[ids] (before the update); table += grad at ids, duplicates summed in order."""
    ids, grad = s.ins
    (table,) = s.state
    e.node("Gather", [table, ids], s.results[0], axis=0)
    index = e.node("Unsqueeze", [e.node("Cast", [ids], to=TensorProto.INT64), e.const(_i64([-1]), "axes")])
    e.node("ScatterND", [table, index, grad], s.state_out[0], reduction="add")


def _accumulate(e: Emitter, s: Site) -> None:
    new = e.node("Add", [s.state[0], s.ins[0]], s.state_out[0])
    e.node("Identity", [new], s.results[0])


def _save(e: Emitter, s: Site) -> None:
    e.node("Identity", s.ins, s.results[0])  # the exporter names it the placeholder's exit value


LOWERINGS: dict[OpKind, Lowering] = {
    OpKind.ADD: _same("Add"),
    OpKind.SUB: _same("Sub"),
    OpKind.MUL: _same("Mul"),
    OpKind.MAX: _same("Max"),
    OpKind.RELU: _same("Relu"),
    OpKind.NEG: _same("Neg"),
    OpKind.TANH: _same("Tanh"),
    OpKind.EXP: _same("Exp"),
    OpKind.IDENTITY: _same("Identity"),
    OpKind.MATMUL: _same("MatMul"),
    OpKind.TRANSPOSE: _transpose,
    OpKind.REDUCE_SUM: _reduce_sum,
    OpKind.CONCAT: _concat,
    OpKind.ROLL: _roll,
    OpKind.RESHAPE: _reshape,
    OpKind.ADD_SUB: _add_sub,
    OpKind.SGD_MOMENTUM: _sgd_momentum,
    OpKind.QUANTIZATION_PROFILE: _quantization_profile,
    OpKind.EMBEDDING_UPDATE: _embedding_update,
    OpKind.ACCUMULATE: _accumulate,
    OpKind.SAVE: _save,
}
