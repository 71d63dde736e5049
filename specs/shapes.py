"""Dtype and shape rules of the op table (DESIGN §3).

Each rule takes the input types, the state types and the attributes (a
mapping with the spec's defaults filled in) and returns the result types, or
raises ``ShapeError`` with a sentence saying what does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Sequence

from specs.cached import cached_property

if TYPE_CHECKING:
    from specs.opspec import Dtype

__all__ = ["ShapeError", "TensorType"]


class ShapeError(ValueError):
    """The operands' shapes, dtypes or attributes do not fit the op's rule."""


@dataclass(frozen=True)
class TensorType:
    shape: tuple[int, ...]
    dtype: "Dtype"

    # cached (in the instance's __dict__, outside the fields: equality and
    # hashing are the fields'): the interpreters ask for these per operand
    @cached_property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @cached_property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __str__(self) -> str:
        return f"{self.dtype.value}[{', '.join(str(d) for d in self.shape)}]"


Types = Sequence[TensorType]
Attrs = Mapping[str, object]


def _broadcast_shapes(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    ndim = max(len(s) for s in shapes)
    out = []
    for axis in range(ndim):
        dims = {s[axis - ndim + len(s)] for s in shapes if axis - ndim + len(s) >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise ShapeError(f"shapes {' and '.join(map(str, shapes))} do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def broadcast(inputs: Types, state: Types, attrs: Attrs) -> tuple[TensorType, ...]:
    return (TensorType(_broadcast_shapes([t.shape for t in inputs]), inputs[0].dtype),)


def same_as_first(inputs: Types, state: Types, attrs: Attrs) -> tuple[TensorType, ...]:
    return (inputs[0],)


def no_results(inputs: Types, state: Types, attrs: Attrs) -> tuple[TensorType, ...]:
    return ()


def matmul(inputs: Types, state: Types, attrs: Attrs) -> tuple[TensorType, ...]:
    a, b = (t.shape for t in inputs)
    if not a or not b:
        raise ShapeError("matmul operands need at least one dimension")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ShapeError(f"matmul inner dimensions differ: {a} @ {b}")
    batch = _broadcast_shapes([a2[:-2], b2[:-2]])
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return (TensorType(out, inputs[0].dtype),)


def _axis(axis: object, ndim: int) -> int:
    if not isinstance(axis, int) or isinstance(axis, bool) or not -ndim <= axis < ndim:
        raise ShapeError(f"axis {axis!r} is out of range for {ndim} dimensions")
    return axis % ndim


def transpose(inputs: Types, state: Types, attrs: Attrs) -> tuple[TensorType, ...]:
    x = inputs[0]
    perm = attrs.get("perm")
    if perm is None:
        perm = tuple(reversed(range(len(x.shape))))
    if sorted(perm) != list(range(len(x.shape))):
        raise ShapeError(f"perm {list(perm)} is not a permutation of {len(x.shape)} axes")
    return (TensorType(tuple(x.shape[p] for p in perm), x.dtype),)


def reduce_axes(axis: object, ndim: int) -> tuple[int, ...]:
    """The normalised, sorted axes a ``reduce_sum`` attribute names."""
    if axis is None:
        return tuple(range(ndim))
    axes = [axis] if isinstance(axis, int) else list(axis)  # type: ignore[arg-type]
    norm = tuple(sorted(_axis(a, ndim) for a in axes))
    if len(set(norm)) != len(norm):
        raise ShapeError(f"axis {axis!r} repeats an axis")
    return norm


def reduce(inputs: Types, state: Types, attrs: Attrs) -> tuple[TensorType, ...]:
    x = inputs[0]
    axes = reduce_axes(attrs.get("axis"), len(x.shape))
    if attrs.get("keepdims"):
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    else:
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return (TensorType(shape, x.dtype),)


def concat(inputs: Types, state: Types, attrs: Attrs) -> tuple[TensorType, ...]:
    first = inputs[0]
    if not first.shape:
        raise ShapeError("concat operands need at least one dimension")
    axis = _axis(attrs.get("axis", 0), len(first.shape))
    total = 0
    for t in inputs:
        if t.dtype != first.dtype:
            raise ShapeError(f"concat operands mix {first.dtype.value} and {t.dtype.value}")
        same_rank = len(t.shape) == len(first.shape)
        if not same_rank or any(
            d != e for i, (d, e) in enumerate(zip(t.shape, first.shape, strict=True)) if i != axis
        ):
            raise ShapeError(f"concat operand shapes {first.shape} and {t.shape} differ off axis {axis}")
        total += t.shape[axis]
    shape = first.shape[:axis] + (total,) + first.shape[axis + 1 :]
    return (TensorType(shape, first.dtype),)


def roll(inputs: Types, state: Types, attrs: Attrs) -> tuple[TensorType, ...]:
    if not inputs[0].shape:
        raise ShapeError("roll needs at least one dimension")
    return (inputs[0],)


def reshape(inputs: Types, state: Types, attrs: Attrs) -> tuple[TensorType, ...]:
    x = inputs[0]
    shape = tuple(attrs["shape"])  # type: ignore[arg-type]
    if any(d < 1 for d in shape):
        raise ShapeError(f"reshape shape {list(shape)} has a dimension below 1")
    out = TensorType(shape, x.dtype)
    if out.size != x.size:
        raise ShapeError(f"cannot reshape {x.size} elements {x.shape} into {shape}")
    return (out,)


def _require_equal(what: str, types: Types) -> None:
    first = types[0]
    for t in types[1:]:
        if t != first:
            raise ShapeError(f"{what} need equal types, got {first} and {t}")


def add_sub(inputs: Types, state: Types, attrs: Attrs) -> tuple[TensorType, ...]:
    (y,) = broadcast(inputs, state, attrs)
    return (y, y)


def sgd_momentum(inputs: Types, state: Types, attrs: Attrs) -> tuple[TensorType, ...]:
    _require_equal("sgd_momentum's w, g and v", inputs)
    return (inputs[0], inputs[2])


def quantization_profile(inputs: Types, state: Types, attrs: Attrs) -> tuple[TensorType, ...]:
    minmax, hist = state
    if minmax.shape != (2,):
        raise ShapeError(f"quantization_profile's minmax must have shape [2], not {list(minmax.shape)}")
    if len(hist.shape) != 1:
        raise ShapeError(f"quantization_profile's hist must have one dimension, not {list(hist.shape)}")
    lo, hi = attrs.get("lo"), attrs.get("hi")
    if not lo < hi:  # type: ignore[operator]
        raise ShapeError(f"quantization_profile needs lo < hi, got lo={lo} hi={hi}")
    return ()


def embedding_update(inputs: Types, state: Types, attrs: Attrs) -> tuple[TensorType, ...]:
    ids, grad = inputs
    (table,) = state
    if len(table.shape) != 2:
        raise ShapeError(f"embedding_update's table must be [rows, columns], not {list(table.shape)}")
    want = ids.shape + table.shape[1:]
    if grad.shape != want:
        raise ShapeError(f"embedding_update's grad must have shape {list(want)}, not {list(grad.shape)}")
    return (grad,)


def accumulate(inputs: Types, state: Types, attrs: Attrs) -> tuple[TensorType, ...]:
    (x,) = inputs
    (acc,) = state
    if acc.shape != x.shape:
        raise ShapeError(f"accumulate's acc {list(acc.shape)} and x {list(x.shape)} differ in shape")
    return (acc,)
