"""The refc graph as the importer builds it: storage, nodes and their types.

Every ONNX value the importer has seen is a ``Value``: a refc reference with
its type, or a constant known at import time (an initializer or a ``Constant``
node's output), which becomes refc storage only when a data operand needs it;
a constant that only gives a shape or axes never does. ``emit`` checks each
new node against the op table (input dtypes, the shape rule) so that a refusal
names the ONNX node rather than a refc invariant later.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from specs import Dtype, OpKind, TensorType
from specs.shapes import ShapeError

from refcompiler.graph import Init, Node, Ref, Storage, StorageKind, freeze_attrs
from refcompiler import limits
from refcompiler.onnx_io.errors import Refused
from refcompiler.onnx_io.types import Namer, check_shape
from refcompiler.spec import spec_of

__all__ = ["Value", "Builder"]

_REFC_NUMPY = {np.dtype(np.float32): Dtype.FLOAT32, np.dtype(np.int32): Dtype.INT32}


@dataclass
class Value:
    """An ONNX value: ``ref`` names refc storage or a node result (``None`` for a
    constant not yet stored); ``const`` is the value when known at import time."""

    ref: str | None
    type: TensorType | None
    const: np.ndarray | None = None
    as_vector: "Value | None" = None  # a 0-d constant stored as shape [1], see ``vector``


class Builder:
    def __init__(self) -> None:
        self.namer = Namer()
        self.storage: list[Storage] = []
        self.nodes: list[Node] = []
        self.types: dict[str, TensorType] = {}

    def add_storage(self, name: str, kind: StorageKind, t: TensorType, init: Init | None) -> Value:
        self.storage.append(Storage(name=name, kind=kind, dtype=t.dtype, shape=t.shape, init=init))
        self.types[name] = t
        return Value(name, t)

    def materialize(self, value: Value, hint: str, where: str) -> str:
        """The refc reference of ``value``, storing a constant the first time it is used as data."""
        if value.ref is not None:
            return value.ref
        array = np.asarray(value.const)
        dtype = _REFC_NUMPY.get(array.dtype)
        if dtype is None:
            raise Refused(where, f"constant '{hint}' is {array.dtype.name}, not a refc dtype (float32, int32); refc reads such a constant only as a shape or axes")
        shape = check_shape(tuple(int(d) for d in array.shape), f"{where}: constant '{hint}'")
        if dtype is Dtype.FLOAT32 and not np.isfinite(array).all():
            raise Refused(where, f"constant '{hint}' holds NaN or infinity; refc constants are finite")
        t = TensorType(shape, dtype)
        _check_size(t, where)
        flat = tuple(array.ravel().tolist())
        stored = self.add_storage(self.namer.fresh(hint), StorageKind.CONSTANT, t, Init(value=flat))
        value.ref, value.type = stored.ref, t
        return stored.ref  # type: ignore[return-value]

    def vector(self, value: Value, hint: str, where: str) -> str:
        """A 0-d constant as a float32[1] operand, for a broadcasting op whose other
        operand has a dimension: the result's shape is the same."""
        if value.ref is not None or value.const is None or np.ndim(value.const) != 0:
            return self.materialize(value, hint, where)
        if value.as_vector is None:
            value.as_vector = Value(None, None, np.asarray(value.const).reshape(1))
        return self.materialize(value.as_vector, hint, where)

    def emit(self, op: OpKind, refs: list[str], attrs: dict[str, object], hint: str, where: str) -> Value:
        """Add a node of ``op`` over ``refs``; its one result's value. Refuses what the op table rejects."""
        spec = spec_of(op)
        types = [self.types[r] for r in refs]
        for k, t in enumerate(types):
            want = spec.input_dtype(k, types[0].dtype)
            if want is not None and t.dtype is not want:
                raise Refused(where, f"input {k} is {t.dtype.value}; refc's {op.value} takes {want.value}")
        full = {a.name: attrs.get(a.name, a.default) for a in spec.attrs}
        try:
            (result,) = spec.shape_rule(types, (), full)
        except ShapeError as e:
            raise Refused(where, f"refc's {op.value} rejects it: {e}") from None
        if any(d == 0 for d in result.shape):
            raise Refused(where, f"its result has shape {list(result.shape)}: zero-sized tensors are not supported")
        _check_size(result, where)
        name = self.namer.fresh(hint)
        self.nodes.append(Node(name=name, op=op, inputs=tuple(Ref.parse(r) for r in refs), attrs=freeze_attrs(attrs)))
        self.types[name] = result
        return Value(name, result)

    def save(self, source: str, target: str) -> None:
        name = self.namer.fresh(f"save_{target}")
        self.nodes.append(Node(name=name, op=OpKind.SAVE, inputs=(Ref.parse(source),), attrs=freeze_attrs({"target": target})))


def _check_size(t: TensorType, where: str) -> None:
    bound = limits.value("elements")
    if math.prod(t.shape) > bound:
        raise Refused(where, f"a tensor of {math.prod(t.shape)} elements is more than refc handles ({bound}, REFC_MAX_ELEMENTS)")
