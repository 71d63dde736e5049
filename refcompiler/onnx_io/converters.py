"""ONNX op -> refc nodes: one converter per ONNX op type, in ``CONVERTERS``.

A converter takes an ``OnnxNode`` (the node, its inputs as ``Value``s, the
model's opset) and returns one ``Value`` per ONNX output. Whatever refc cannot
express exactly is refused with ``Refused`` naming the node, its op and why.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from onnx import NodeProto, helper

from specs import OpKind, TensorType

from refcompiler.onnx_io.builder import Builder, Value
from refcompiler.onnx_io.errors import Refused
from refcompiler.onnx_io.types import ONNX_DTYPE, dtype_name, tensor_array

__all__ = ["OnnxNode", "CONVERTERS"]


class OnnxNode:
    """One ONNX node as a converter sees it."""

    def __init__(self, b: Builder, node: NodeProto, env: dict[str, Value], opset: int, where: str):
        self.b, self.node, self.opset, self.where = b, node, opset, where
        self.inputs: list[Value | None] = []
        for name in node.input:
            if name and name not in env:
                raise Refused(where, f"input '{name}' is not produced before this node")
            self.inputs.append(env[name] if name else None)
        self.hint = next((o for o in node.output if o), node.name or node.op_type.lower())
        self.attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}

    def refuse(self, why: str) -> Refused:
        return Refused(self.where, why)

    def has(self, i: int) -> bool:
        return i < len(self.inputs) and self.inputs[i] is not None

    def value(self, i: int) -> Value:
        if not self.has(i):
            raise self.refuse(f"input {i} is missing")
        return self.inputs[i]  # type: ignore[return-value]

    def data(self, i: int) -> str:
        return self.b.materialize(self.value(i), self.node.input[i], self.where)

    def type(self, i: int) -> TensorType:
        self.data(i)
        return self.value(i).type  # type: ignore[return-value]

    def const(self, i: int, what: str) -> np.ndarray:
        v = self.value(i)
        if v.const is None:
            raise self.refuse(f"its {what} (input {i}) is not a constant; refc needs it known at import time")
        return v.const

    def const_ints(self, i: int, what: str) -> list[int]:
        """A constant int64 list input (ONNX's axes and shapes are 1-d int64 tensors)."""
        v = self.const(i, what)
        if v.dtype != np.int64 or v.ndim != 1:
            raise self.refuse(f"its {what} (input {i}) is {v.dtype}{list(v.shape)}; ONNX has it a 1-d int64 tensor")
        return [int(d) for d in v]

    def attr(self, name: str, default: object = None) -> object:
        return self.attrs.get(name, default)

    def emit(self, op: OpKind, refs: list[str], attrs: dict[str, object] | None = None) -> Value:
        return self.b.emit(op, refs, attrs or {}, self.hint, self.where)

    def operands(self, count: int) -> list[str]:
        """Inputs 0..count-1 as data of a broadcasting op (0-d constants as [1]
        when another input has a dimension)."""
        values = [self.value(i) for i in range(count)]
        ranked = any(np.ndim(v.const) > 0 if v.ref is None else len(v.type.shape) > 0 for v in values)  # type: ignore[union-attr]
        if not ranked:
            return [self.data(i) for i in range(count)]
        return [self.b.vector(v, self.node.input[i], self.where) for i, v in enumerate(values)]

    def scalar(self, x: float) -> str:
        """A float32[1] constant: ``x`` as a broadcasting operand."""
        return self.b.materialize(Value(None, None, np.array([x], dtype=np.float32)), f"{self.hint}.k", self.where)


Converter = Callable[[OnnxNode], list[Value]]


def _elementwise(op: OpKind, arity: int) -> Converter:
    def convert(n: OnnxNode) -> list[Value]:
        return [n.emit(op, [n.data(i) for i in range(arity)])]

    return convert


def _broadcasting(op: OpKind) -> Converter:
    """A binary op with numpy broadcasting; a 0-d constant beside a tensor with a
    dimension is stored as shape [1], which broadcasts to the same result."""

    def convert(n: OnnxNode) -> list[Value]:
        return [n.emit(op, n.operands(2))]

    return convert


def _max(n: OnnxNode) -> list[Value]:
    """Variadic Max as a chain of binary maxima, left to right (as numpy folds it)."""
    refs = n.operands(len(n.inputs))
    if len(refs) == 1:
        return [n.emit(OpKind.IDENTITY, refs)]
    acc = n.emit(OpKind.MAX, refs[:2])
    for r in refs[2:]:
        acc = n.emit(OpKind.MAX, [acc.ref, r])  # type: ignore[list-item]
    return [acc]


def _gemm(n: OnnxNode) -> list[Value]:
    """Y = alpha * (A' @ B') + beta * C, as transpose, matmul, mul and add."""
    if len(n.type(0).shape) != 2 or len(n.type(1).shape) != 2:
        raise n.refuse("Gemm needs 2-d A and B")
    a, b = n.data(0), n.data(1)
    if n.attr("transA", 0):
        a = n.emit(OpKind.TRANSPOSE, [a], {"perm": [1, 0]}).ref  # type: ignore[assignment]
    if n.attr("transB", 0):
        b = n.emit(OpKind.TRANSPOSE, [b], {"perm": [1, 0]}).ref  # type: ignore[assignment]
    y = n.emit(OpKind.MATMUL, [a, b])
    alpha, beta = float(n.attr("alpha", 1.0)), float(n.attr("beta", 1.0))  # type: ignore[arg-type]
    if alpha != 1.0:
        y = n.emit(OpKind.MUL, [y.ref, n.scalar(alpha)])  # type: ignore[list-item]
    if not n.has(2):
        return [y]
    if beta == 0.0:  # C is still an input of the op: it must broadcast, as ONNX says whatever beta is
        c_value = n.value(2)  # (not stored: it adds nothing)
        c_shape = tuple(c_value.const.shape) if c_value.const is not None else c_value.type.shape  # type: ignore[union-attr]
        try:
            fits = np.broadcast_shapes(c_shape, y.type.shape) == y.type.shape  # type: ignore[union-attr]
        except ValueError:
            fits = False
        if not fits:
            raise n.refuse(f"C {list(c_shape)} does not broadcast to the shape of A @ B, {list(y.type.shape)}")  # type: ignore[union-attr]
        return [y]
    c = n.data(2)
    if beta != 1.0:
        c = n.emit(OpKind.MUL, [c, n.scalar(beta)]).ref  # type: ignore[assignment]
    out = n.emit(OpKind.ADD, [y.ref, c])  # type: ignore[list-item]
    if out.type != y.type:
        raise n.refuse(f"C does not broadcast to the shape of A @ B, {list(y.type.shape)}")  # type: ignore[union-attr]
    return [out]


def _transpose(n: OnnxNode) -> list[Value]:
    perm = n.attr("perm")
    return [n.emit(OpKind.TRANSPOSE, [n.data(0)], {} if perm is None else {"perm": [int(p) for p in perm]})]  # type: ignore[union-attr]


def _reduce_sum(n: OnnxNode) -> list[Value]:
    """Axes as an attribute before opset 13, as a constant input from 13."""
    x = n.data(0)
    if n.opset >= 13:
        axes = n.const_ints(1, "axes") if n.has(1) else None
    else:
        axes = [int(a) for a in n.attr("axes")] if n.attr("axes") is not None else None  # type: ignore[union-attr]
    if axes == []:
        axes = None
    if axes is None and n.attr("noop_with_empty_axes", 0):
        return [n.emit(OpKind.IDENTITY, [x])]
    return [n.emit(OpKind.REDUCE_SUM, [x], {"axis": axes, "keepdims": bool(n.attr("keepdims", 1))})]


def _concat(n: OnnxNode) -> list[Value]:
    if n.attr("axis") is None:
        raise n.refuse("Concat needs an axis")
    return [n.emit(OpKind.CONCAT, [n.data(i) for i in range(len(n.inputs))], {"axis": int(n.attr("axis"))})]  # type: ignore[arg-type]


def _reshape(n: OnnxNode) -> list[Value]:
    """A constant target shape: 0 copies the input's dimension (unless ``allowzero``), -1 is inferred."""
    x, xt = n.data(0), n.type(0)
    shape = n.const_ints(1, "shape")
    if n.attr("allowzero", 0) and 0 in shape:
        raise n.refuse(f"shape {shape} with allowzero=1 is zero-sized: zero-sized tensors are not supported")
    if shape.count(-1) > 1 or any(d < -1 for d in shape):
        raise n.refuse(f"shape {shape} is not a valid Reshape target")
    out = []
    for k, d in enumerate(shape):
        if d == 0:
            if k >= len(xt.shape):
                raise n.refuse(f"shape {shape} copies dimension {k}, which the input {list(xt.shape)} lacks")
            d = xt.shape[k]
        out.append(d)
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        if known == 0 or xt.size % known:
            raise n.refuse(f"cannot infer -1 in {shape} for {xt.size} elements")
        out[out.index(-1)] = xt.size // known
    return [n.emit(OpKind.RESHAPE, [x], {"shape": out})]


def _cast(n: OnnxNode) -> list[Value]:
    to, have = int(n.attr("to")), n.type(0).dtype  # type: ignore[arg-type]
    if ONNX_DTYPE[have] != to:
        raise n.refuse(f"Cast from {have.value} to {dtype_name(to)}: refc casts only between identical types")
    return [n.emit(OpKind.IDENTITY, [n.data(0)])]


def _constant(n: OnnxNode) -> list[Value]:
    a = n.attrs
    given = sorted(k for k in a if k.startswith(("value", "sparse_value")))
    if len(given) > 1:
        raise n.refuse(f"a Constant has exactly one value attribute, this one {', '.join(given)}")
    if "value" in a:
        array = tensor_array(a["value"], n.where)
    elif "value_float" in a or "value_floats" in a:
        array = np.array(a.get("value_float", a.get("value_floats")), dtype=np.float32)
    elif "value_int" in a or "value_ints" in a:
        array = np.array(a.get("value_int", a.get("value_ints")), dtype=np.int64)
    else:
        raise n.refuse(f"a Constant with {', '.join(sorted(a)) or 'no value'} is not supported")
    return [Value(None, None, array)]


CONVERTERS: dict[str, Converter] = {
    "Add": _broadcasting(OpKind.ADD),
    "Sub": _broadcasting(OpKind.SUB),
    "Mul": _broadcasting(OpKind.MUL),
    "Max": _max,
    "Relu": _elementwise(OpKind.RELU, 1),
    "Neg": _elementwise(OpKind.NEG, 1),
    "Tanh": _elementwise(OpKind.TANH, 1),
    "Exp": _elementwise(OpKind.EXP, 1),
    "Identity": _elementwise(OpKind.IDENTITY, 1),
    "MatMul": _elementwise(OpKind.MATMUL, 2),
    "Gemm": _gemm,
    "Transpose": _transpose,
    "ReduceSum": _reduce_sum,
    "Concat": _concat,
    "Reshape": _reshape,
    "Cast": _cast,
    "Constant": _constant,
}
