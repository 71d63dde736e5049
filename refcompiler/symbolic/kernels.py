"""The symbolic kernel table, derived from the op table (``specs``).

A symbolic kernel has the contract of a numpy kernel (``refcompiler.kernels``)
on tensors of term ids: ``kernel(ctx, inputs, state, attrs) -> (results,
new_state)``, pure, with the op's exact shapes and broadcasting. It is derived
from the spec:

- an elementwise op with one result is its op's uninterpreted function per
  element, after numpy broadcasting (``add(a_i, b_i)``);
- a data-movement op (identity, transpose, concat, roll, reshape) is the
  numpy kernel itself, run on the id arrays: it only moves elements;
- ``matmul`` and ``reduce_sum`` apply one uninterpreted function to the whole
  row and column, or the whole reduced slice, in index order (the kernel fixes
  the summation order);
- ``max`` on float32 is the uninterpreted ``max`` (NaN and the sign of zero
  are the kernel's business); on int32 it is interpreted, ``ite(a <= b, b, a)``;
- ``add_sub``, ``sgd_momentum``, ``accumulate`` are written with the same
  per-element functions their numpy kernels use (float32 ``add``, ``mul``...);
- ``quantization_profile`` and ``embedding_update`` keep their structure:
  symbolic ids select rows by if-then-else, ``np.add.at`` adds in index order,
  and each lookup adds the condition that its id is in range to
  ``ctx.guards`` (out of range, the concrete kernel raises).

Trusting kernels as uninterpreted functions is the proof's scope.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np

from specs import OPS, OpKind
from specs.shapes import reduce_axes

from refcompiler.kernels import KERNELS
from refcompiler.symbolic.terms import Sort, Terms

__all__ = ["Context", "SYMBOLIC_KERNELS", "MOVES", "run_symbolic_kernel", "shared_kernel_values"]

Arrays = Sequence[np.ndarray]
Result = tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]


@dataclass
class Context:
    """The term table, and the conditions under which the concrete kernels run
    without error (embedding ids in range), collected as kernels run."""

    terms: Terms
    guards: list[int] = field(default_factory=list)


# Entries of a term table's kernel memo before it is emptied (a bound on memory).
MEMO_SIZE = 4096

SymbolicKernel = Callable[[Context, Arrays, Arrays, Mapping[str, object]], Result]

# Ops whose kernel only moves elements: the numpy kernel runs on the ids unchanged.
MOVES = frozenset({OpKind.IDENTITY, OpKind.TRANSPOSE, OpKind.CONCAT, OpKind.ROLL, OpKind.RESHAPE})


def _moved(kind: OpKind) -> SymbolicKernel:
    def kernel(ctx: Context, inputs: Arrays, state: Arrays, attrs: Mapping[str, object]) -> Result:
        return KERNELS[kind](inputs, state, attrs)

    return kernel


def _elementwise(kind: OpKind) -> SymbolicKernel:
    def kernel(ctx: Context, inputs: Arrays, state: Arrays, attrs: Mapping[str, object]) -> Result:
        return (ctx.terms.map(kind.value, *inputs),), ()

    return kernel


def _matmul(ctx: Context, inputs: Arrays, state: Arrays, attrs: Mapping[str, object]) -> Result:
    a, b = inputs
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    a2 = np.broadcast_to(a2, batch + a2.shape[-2:])
    b2 = np.broadcast_to(b2, batch + b2.shape[-2:])
    k = a2.shape[-1]
    out = np.empty(batch + (a2.shape[-2], b2.shape[-1]), dtype=np.int64)
    for pos in np.ndindex(*out.shape):
        *bt, i, j = pos
        row, col = a2[tuple(bt) + (i,)], b2[tuple(bt) + (slice(None), j)]
        out[pos] = ctx.terms.app(f"matmul/{k}", [*row, *col])
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return (out,), ()


def _reduce_sum(ctx: Context, inputs: Arrays, state: Arrays, attrs: Mapping[str, object]) -> Result:
    (x,) = inputs
    axes = reduce_axes(attrs.get("axis"), x.ndim)
    kept = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    moved = np.moveaxis(x, axes, tuple(range(x.ndim - len(axes), x.ndim)))
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    rows = moved.reshape(kept + (n,))
    out = np.empty(kept, dtype=np.int64)
    for pos in np.ndindex(*kept):
        out[pos] = ctx.terms.app(f"reduce_sum/{n}", rows[pos])
    if attrs.get("keepdims"):
        out = out.reshape(tuple(1 if i in axes else d for i, d in enumerate(x.shape)))
    return (out,), ()


def _max(ctx: Context, inputs: Arrays, state: Arrays, attrs: Mapping[str, object]) -> Result:
    t = ctx.terms
    if not all(t.all_of_sort(x.reshape(-1), Sort.I) for x in inputs):
        return (t.map("max", *inputs),), ()
    a, b = np.broadcast_arrays(*inputs)
    pairs = zip(a.reshape(-1).tolist(), b.reshape(-1).tolist(), strict=True)
    out = [t.ite(t.le(x, y), y, x) for x, y in pairs]
    return (np.array(out, dtype=np.int64).reshape(a.shape),), ()


def _add_sub(ctx: Context, inputs: Arrays, state: Arrays, attrs: Mapping[str, object]) -> Result:
    a, b = inputs
    return (ctx.terms.map("add", a, b), ctx.terms.map("sub", a, b)), ()


def _sgd_momentum(ctx: Context, inputs: Arrays, state: Arrays, attrs: Mapping[str, object]) -> Result:
    w, g, v = inputs
    t = ctx.terms
    lr, mu = t.fconst(float(attrs["lr"])), t.fconst(float(attrs["mu"]))  # type: ignore[arg-type]
    v_new = t.map("add", t.map("mul", np.int64(mu), v), g)
    w_new = t.map("sub", w, t.map("mul", np.int64(lr), v_new))
    return (w_new, v_new), ()


def _accumulate(ctx: Context, inputs: Arrays, state: Arrays, attrs: Mapping[str, object]) -> Result:
    new = ctx.terms.map("add", state[0], inputs[0])
    return (new.copy(),), (new,)


def _quantization_profile(ctx: Context, inputs: Arrays, state: Arrays, attrs: Mapping[str, object]) -> Result:
    t = ctx.terms
    x = inputs[0].reshape(-1)
    minmax, hist = state
    lo, hi, k = float(attrs["lo"]), float(attrs["hi"]), hist.shape[0]  # type: ignore[arg-type]
    n = x.size
    key = (OpKind.QUANTIZATION_PROFILE, x.dtype.str, x.tobytes(), repr(lo), repr(hi), k)
    part = _parts(t).get(key)
    if part is None:  # the terms of ``x`` alone, made in the order they were always made
        amin = t.app(f"amin/{n}", x)
        low = t.app("minimum", (minmax[0], amin))
        amax = t.app(f"amax/{n}", x)
        high = t.app("max", (minmax[1], amax))
        bins = [t.app(f"bin/{lo!r}/{hi!r}/{k}", (e,), Sort.I) for e in x]
        counts = [t.app("int_as_f32", (t.count(t.eq(b, t.iconst(j)) for b in bins),)) for j in range(k)]
        _parts(t)[key] = (amin, amax, counts)
    else:  # found: made already in this table, so made again they would be found
        amin, amax, counts = part
        low = t.app("minimum", (minmax[0], amin))
        high = t.app("max", (minmax[1], amax))
    new_hist = np.array([t.app("add", (hist[j], counts[j])) for j in range(k)], dtype=np.int64)
    return (), (np.array([low, high], dtype=np.int64), new_hist)


def _parts(t: Terms) -> dict[tuple, tuple]:
    """``t.part_memo``: a stateful kernel's terms that are a function of its
    inputs and attributes alone, kept per term table. The machine computes
    such a kernel again for each chunk of its in-place state, on the same
    inputs: only the terms made from the state are asked for again."""
    if len(t.part_memo) >= MEMO_SIZE:
        t.part_memo.clear()
    return t.part_memo


def _is_row(t: Terms, known: dict[tuple[int, int], int], i: int, r: int) -> int:
    """``i == r`` (``r`` a row number), found in ``known`` after its first making:
    hash-consed, so the same term; made where it was first asked, so every term
    is made in the same order as without ``known``."""
    found = known.get((i, r))
    if found is None:
        found = known[(i, r)] = t.eq(i, t.iconst(r))
    return found


def _select_row(t: Terms, table: list[list[int]], cols: int, i: int, known: dict[tuple[int, int], int]) -> np.ndarray:
    """``table[i]`` (``cols`` columns) for a symbolic ``i``: an if-then-else chain over the rows."""
    missing = t.app("embedding_id_out_of_range", ())
    out = []
    for j in range(cols):
        value = missing
        for r in reversed(range(len(table))):
            value = t.ite(_is_row(t, known, i, r), table[r][j], value)
        out.append(value)
    return np.array(out, dtype=np.int64)


def _embedding_update(ctx: Context, inputs: Arrays, state: Arrays, attrs: Mapping[str, object]) -> Result:
    t = ctx.terms
    ids, grad = inputs
    (table,) = state
    n_rows, cols = table.shape
    flat_ids = [int(i) for i in ids.reshape(-1)]
    grads = grad.reshape(len(flat_ids), cols).tolist()
    rows = table.tolist()
    key = (OpKind.EMBEDDING_UPDATE, ids.dtype.str, ids.tobytes(), n_rows)
    part = _parts(t).get(key)
    if part is None:  # the guards and each id-equals-row condition, made where first asked
        guards = [t.and_(t.le(t.iconst(0), i), t.le(i, t.iconst(n_rows - 1))) for i in flat_ids]
        ctx.guards.extend(guards)
        known: dict[tuple[int, int], int] = {}
        looked_up = [_select_row(t, rows, cols, i, known) for i in flat_ids]
        _parts(t)[key] = (guards, known)
    else:  # found: every term they are made of is in the table
        guards, known = part
        ctx.guards.extend(guards)
        looked_up = _select_known_rows(t, rows, cols, flat_ids, known)
    new_table = table.copy()
    if cols:  # then ``_select_row`` asked every condition: each is in ``known``
        grad_columns = [[g[j] for g in grads] for j in range(cols)]
        for r in range(n_rows):
            conds = [known[(i, r)] for i in flat_ids]
            for j in range(cols):  # np.add.at adds in index order
                new_table[r, j] = t.add_where("add", rows[r][j], conds, grad_columns[j])
    return (np.array(looked_up, dtype=np.int64).reshape(grad.shape),), (new_table,)


def _select_known_rows(t: Terms, table: list[list[int]], cols: int, ids: list[int], known: dict[tuple[int, int], int]) -> list[np.ndarray]:
    """``_select_row`` of each of ``ids``, every condition in ``known`` (found,
    not made: so the ``ite``s are made in ``_select_row``'s order)."""
    if not ids:
        return []
    missing = t.app("embedding_id_out_of_range", ())
    order = range(len(table) - 1, -1, -1)
    columns = [[table[r][j] for r in order] for j in range(cols)]
    out = []
    for i in ids:
        conds = [known[(i, r)] for r in order] if cols else []
        out.append(np.array([t.select(conds, column, missing) for column in columns], dtype=np.int64))
    return out


def _save(ctx: Context, inputs: Arrays, state: Arrays, attrs: Mapping[str, object]) -> Result:
    return (), ()


_WRITTEN: dict[OpKind, SymbolicKernel] = {
    OpKind.MAX: _max,
    OpKind.MATMUL: _matmul,
    OpKind.REDUCE_SUM: _reduce_sum,
    OpKind.ADD_SUB: _add_sub,
    OpKind.SGD_MOMENTUM: _sgd_momentum,
    OpKind.ACCUMULATE: _accumulate,
    OpKind.QUANTIZATION_PROFILE: _quantization_profile,
    OpKind.EMBEDDING_UPDATE: _embedding_update,
    OpKind.SAVE: _save,
}


def _derive(kind: OpKind) -> SymbolicKernel | None:
    spec = OPS[kind]
    if kind in MOVES:
        return _moved(kind)
    if kind in _WRITTEN:
        return _WRITTEN[kind]
    if spec.elementwise and len(spec.results) == 1 and not spec.state:
        return _elementwise(kind)
    return None


SYMBOLIC_KERNELS: dict[OpKind, SymbolicKernel] = {k: fn for k in OPS if (fn := _derive(k)) is not None}


def run_symbolic_kernel(ctx: Context, op: OpKind, inputs: Arrays, state: Arrays, attrs: Mapping[str, object]) -> Result:
    """Run ``op``'s symbolic kernel; results come back as contiguous ``int64``
    id arrays, the caller's (``shared_kernel_values``' copies)."""
    results, new_state = shared_kernel_values(ctx, op, inputs, state, attrs)
    return tuple(r.copy() for r in results), tuple(s.copy() for s in new_state)


def shared_kernel_values(ctx: Context, op: OpKind, inputs: Arrays, state: Arrays, attrs: Mapping[str, object]) -> Result:
    """``run_symbolic_kernel`` without the copies: the arrays are read-only,
    shared by every call that finds them.

    Remembered per term table (``Terms.kernel_memo``): a kernel is a pure
    function of its op, attributes and operand ids, and terms are hash-consed,
    so the same call gives the same ids and adds the same guards (replayed
    here). Programs of one graph mostly compute the reference's values, so
    most calls after the reference are found."""
    ins = [a if type(a) is np.ndarray else np.asarray(a) for a in inputs]
    st = [s if type(s) is np.ndarray else np.asarray(s) for s in state]
    key = (op, repr(sorted(attrs.items())), *[(a.shape, a.dtype.str, a.tobytes()) for a in (*ins, *st)])
    memo = ctx.terms.kernel_memo
    found = memo.get(key)
    if found is None:
        before = len(ctx.guards)
        results, new_state = SYMBOLIC_KERNELS[op](ctx, ins, st, attrs)
        found = (tuple(map(_kept, results)), tuple(map(_kept, new_state)), tuple(ctx.guards[before:]))
        if len(memo) >= MEMO_SIZE:
            memo.clear()
        memo[key] = found
    elif found[2]:
        ctx.guards.extend(found[2])
    return found[0], found[1]


def _kept(value: np.ndarray) -> np.ndarray:
    """A read-only ``int64`` copy of a kernel's value, of its shape (kept in the memo)."""
    kept = np.array(value, dtype=np.int64).reshape(np.shape(value))
    kept.flags.writeable = False
    return kept
