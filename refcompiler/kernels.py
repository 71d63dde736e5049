"""The numpy kernels: one table keyed by op kind (DESIGN §3).

A kernel is a pure function ``kernel(inputs, state, attrs) -> (results,
new_state)``: it never writes its arguments, and returns fresh arrays. The
reference interpreter and the IR interpreter call the same kernels, which is
why their results can be compared bit for bit.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from specs import OpKind
from specs.shapes import reduce_axes

from refcompiler.errors import ExecutionError

__all__ = ["KERNELS", "Kernel", "run_kernel", "prepared"]

Arrays = Sequence[np.ndarray]
Attrs = Mapping[str, object]
Kernel = Callable[[Arrays, Arrays, Attrs], tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]]

F32 = np.float32
_ZERO = F32(0)


def _pure(fn: Callable[..., np.ndarray], *attr_names: str) -> Kernel:
    """A kernel with one result and no state: ``fn(*inputs, **named attributes)``."""

    def kernel(inputs: Arrays, state: Arrays, attrs: Attrs) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
        return (np.asarray(fn(*inputs, **{k: attrs[k] for k in attr_names})),), ()

    kernel.pure = (fn, attr_names)  # type: ignore[attr-defined]  # for ``prepared``
    return kernel


def _transpose(x: np.ndarray, *, perm: Sequence[int] | None) -> np.ndarray:
    return x.transpose(None if perm is None else tuple(perm)).copy()


def _reduce_sum(x: np.ndarray, *, axis: object, keepdims: bool) -> np.ndarray:
    return np.asarray(x.sum(axis=reduce_axes(axis, x.ndim), keepdims=bool(keepdims), dtype=F32))


def _roll(x: np.ndarray) -> np.ndarray:
    """``np.roll(x, 1, axis=0)`` (the same rows moved: the same bits) for a fifth of its cost."""
    if x.ndim == 0:
        return np.roll(x, 1, axis=0)  # its error
    return np.concatenate((x[-1:], x[:-1]))


def _concat(*xs: np.ndarray, axis: int) -> np.ndarray:
    return np.concatenate(xs, axis=axis)


def _reshape(x: np.ndarray, *, shape: Sequence[int]) -> np.ndarray:
    return x.reshape(tuple(shape)).copy()


def _add_sub(inputs: Arrays, state: Arrays, attrs: Attrs) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    a, b = inputs
    return (np.add(a, b), np.subtract(a, b)), ()


def _sgd_momentum(inputs: Arrays, state: Arrays, attrs: Attrs) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    w, g, v = inputs
    lr, mu = F32(attrs["lr"]), F32(attrs["mu"])
    v_new = mu * v + g
    w_new = w - lr * v_new
    return (w_new, v_new), ()


def histogram_bins(x: np.ndarray, lo: float, hi: float, k: int) -> np.ndarray:
    """Bin index of each element: k equal bins over [lo, hi), outside clipped, NaN in bin 0."""
    t = np.floor((x.astype(np.float64) - lo) * (k / (hi - lo)))
    # fmax ignores a NaN (NaN -> 0.0, below -> 0.0), minimum clips above: two
    # ufuncs instead of isnan, where and clip (the same bins; only the sign of
    # a zero may differ, which the cast to an integer drops)
    return np.minimum(np.fmax(t, 0.0), k - 1).astype(np.int64)


def _quantization_profile(inputs: Arrays, state: Arrays, attrs: Attrs) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    (x,) = inputs
    minmax, hist = state
    new_minmax = np.array([np.minimum(minmax[0], x.min()), np.maximum(minmax[1], x.max())], dtype=F32)
    counts = np.bincount(histogram_bins(x, float(attrs["lo"]), float(attrs["hi"]), hist.shape[0]).ravel(), minlength=hist.shape[0])
    return (), (new_minmax, (hist + counts.astype(F32)).astype(F32))


def _embedding_update(inputs: Arrays, state: Arrays, attrs: Attrs) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    ids, grad = inputs
    (table,) = state
    rows = table.shape[0]
    if ids.size and (ids.min() < 0 or ids.max() >= rows):  # two reductions: cheaper than a mask
        bad = (ids < 0) | (ids >= rows)
        raise ExecutionError(f"embedding id {int(ids[bad].flat[0])} is out of range for a table of {rows} rows")
    looked_up = table.take(ids, axis=0)  # ``table[ids]``, for less
    new_table = table.copy()
    np.add.at(new_table, ids, grad)
    return (looked_up,), (new_table,)


def _accumulate(inputs: Arrays, state: Arrays, attrs: Attrs) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    (x,) = inputs
    (acc,) = state
    new = acc + x
    return (new.copy(),), (new,)


def _save(inputs: Arrays, state: Arrays, attrs: Attrs) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    return (), ()


KERNELS: dict[OpKind, Kernel] = {
    OpKind.ADD: _pure(np.add),
    OpKind.SUB: _pure(np.subtract),
    OpKind.MUL: _pure(np.multiply),
    OpKind.MAX: _pure(np.maximum),
    OpKind.RELU: _pure(lambda x: np.maximum(x, _ZERO)),
    OpKind.NEG: _pure(np.negative),
    OpKind.TANH: _pure(np.tanh),
    OpKind.EXP: _pure(np.exp),
    OpKind.IDENTITY: _pure(lambda x: x.copy()),
    OpKind.MATMUL: _pure(np.matmul),
    OpKind.TRANSPOSE: _pure(_transpose, "perm"),
    OpKind.REDUCE_SUM: _pure(_reduce_sum, "axis", "keepdims"),
    OpKind.CONCAT: _pure(_concat, "axis"),
    OpKind.ROLL: _pure(_roll),
    OpKind.RESHAPE: _pure(_reshape, "shape"),
    OpKind.ADD_SUB: _add_sub,
    OpKind.SGD_MOMENTUM: _sgd_momentum,
    OpKind.QUANTIZATION_PROFILE: _quantization_profile,
    OpKind.EMBEDDING_UPDATE: _embedding_update,
    OpKind.ACCUMULATE: _accumulate,
    OpKind.SAVE: _save,
}


def run_kernel(op: OpKind, inputs: Arrays, state: Arrays, attrs: Attrs) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """Run ``op``'s kernel; results come back as contiguous arrays of the result dtype."""
    with np.errstate(all="ignore"):
        results, new_state = KERNELS[op](inputs, state, attrs)
    # np.ascontiguousarray turns a 0-d array into shape (1,); keep the shape the spec gives.
    return tuple(np.ascontiguousarray(r).reshape(np.shape(r)) for r in results), tuple(
        np.ascontiguousarray(s).reshape(np.shape(s)) for s in new_state
    )


Prepared = Callable[[Arrays, Arrays], tuple[np.ndarray, ...]]


def prepared(op: OpKind, attrs: Attrs) -> Prepared:
    """``run_kernel(op, inputs, state, attrs)`` with ``attrs`` bound, for a
    caller that runs one kernel many times: ``fn(inputs, state)`` gives the
    results then the new state in one tuple, each an ``ndarray`` of the values
    ``run_kernel`` gives (the same kernel; only not made contiguous: the caller
    copies them into memory). It does not enter ``np.errstate``: the caller
    runs it under ``np.errstate(all="ignore")``, as ``run_kernel`` does."""
    kernel = KERNELS[op]
    pure = getattr(kernel, "pure", None)
    if pure is not None and all(k in attrs for k in pure[1]):  # the common case: one call, its keywords made once
        fn, names = pure
        kwargs = {k: attrs[k] for k in names}
        asarray = np.asarray
        return lambda inputs, state: (asarray(fn(*inputs, **kwargs)),)

    def run(inputs: Arrays, state: Arrays) -> tuple[np.ndarray, ...]:
        results, new_state = kernel(inputs, state, attrs)
        values = (*results, *new_state)
        for r in values:
            if type(r) is not np.ndarray:
                return tuple(np.asarray(r) for r in values)
        return values

    return run
