"""Dtypes, shapes and names shared by the importer and the exporter."""

from __future__ import annotations

import re

import numpy as np
from onnx import TensorProto, ValueInfoProto, helper, numpy_helper

from specs import Dtype

from refcompiler.onnx_io.errors import Refused

__all__ = ["ONNX_DTYPE", "refc_dtype", "check_shape", "static_shape", "tensor_array", "Namer", "sanitize", "dtype_name"]

ONNX_DTYPE: dict[Dtype, int] = {Dtype.FLOAT32: TensorProto.FLOAT, Dtype.INT32: TensorProto.INT32}
_REFC_DTYPE = {v: k for k, v in ONNX_DTYPE.items()}
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.\-]")
MAX_RANK = 8  # as a graph file's shapes (specs/refc-graph-1.schema.json)
MAX_DIM = 2**31 - 1


def dtype_name(elem_type: int) -> str:
    try:
        return helper.tensor_dtype_to_np_dtype(elem_type).name if elem_type != TensorProto.UNDEFINED else "undefined"
    except (KeyError, ValueError, TypeError):
        return TensorProto.DataType.Name(elem_type).lower() if elem_type in TensorProto.DataType.values() else str(elem_type)


def refc_dtype(elem_type: int, where: str) -> Dtype:
    """The refc dtype of an ONNX element type; any other is refused."""
    if elem_type not in _REFC_DTYPE:
        hint = "; an int64 shape or axes input can be fixed by giving its value" if elem_type == TensorProto.INT64 else ""
        raise Refused(where, f"dtype {dtype_name(elem_type)} is not a refc dtype (float32, int32){hint}")
    return _REFC_DTYPE[elem_type]


def check_shape(shape: tuple[int, ...], where: str) -> tuple[int, ...]:
    """A refc storage shape: 1 to ``MAX_RANK`` dimensions, each in 1..``MAX_DIM``
    (what a graph file may hold: the graph written is one refc reads back)."""
    if not shape:
        raise Refused(where, "is 0-d (a scalar); refc storage has at least one dimension")
    if len(shape) > MAX_RANK:
        raise Refused(where, f"has rank {len(shape)}; refc shapes have at most {MAX_RANK} dimensions")
    if any(d == 0 for d in shape):
        raise Refused(where, f"has shape {list(shape)}: zero-sized tensors are not supported")
    if any(not 1 <= d <= MAX_DIM for d in shape):
        raise Refused(where, f"has shape {list(shape)}: each dimension must be in 1..{MAX_DIM}")
    return shape


def tensor_array(t: TensorProto, where: str) -> np.ndarray:
    """The value of a tensor held in the model; data that does not fill its
    shape (``raw_data`` of 17 bytes for a float32[4]) is refused, not raised."""
    try:
        return numpy_helper.to_array(t)
    except (ValueError, TypeError) as e:
        raise Refused(where, f"its data does not match its type and shape {list(t.dims)}: {e}") from None


def static_shape(info: ValueInfoProto, dims: dict[str, int], where: str) -> tuple[int, ...]:
    """The concrete shape of a graph input or output; dynamic dims come from ``dims`` (``--dim``)."""
    t = info.type
    if not t.HasField("tensor_type"):
        raise Refused(where, "is not a tensor")
    if not t.tensor_type.HasField("shape"):
        raise Refused(where, "has no shape")
    shape = []
    for k, d in enumerate(t.tensor_type.shape.dim):
        if d.HasField("dim_value"):
            shape.append(d.dim_value)
        elif d.HasField("dim_param"):
            if d.dim_param not in dims:
                raise Refused(where, f"dimension {k} '{d.dim_param}' is dynamic: bind it with --dim {d.dim_param}=SIZE")
            shape.append(dims[d.dim_param])
        else:
            raise Refused(where, f"dimension {k} has no size: a dynamic dimension without a name cannot be bound")
    return check_shape(tuple(shape), where)


def sanitize(text: str) -> str:
    """``text`` as a refc name: letters, digits, ``_ . -``, not starting with a digit."""
    name = _NAME_CHARS.sub("_", text) or "v"
    return name if re.match(r"[A-Za-z_]", name) else f"_{name}"


class Namer:
    """Unique names: a hint, made valid, with ``.1``, ``.2``... appended on a clash."""

    def __init__(self, *, clean: bool = True) -> None:
        self.used: set[str] = set()
        self.clean = clean

    def fresh(self, hint: str) -> str:
        base = sanitize(hint) if self.clean else hint
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}.{k}"
        self.used.add(name)
        return name
