"""The symbolic kernel table, derived from the op table: complete, and with the
shapes the numpy kernels give; data movement is numpy's own on the ids."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specs import OPS, OpKind

from refcompiler.graph_json import load_graph
from refcompiler.kernels import run_kernel
from refcompiler.symbolic.kernels import MOVES, SYMBOLIC_KERNELS, Context, run_symbolic_kernel
from refcompiler.symbolic.terms import Sort, Terms
from refcompiler.values import constant_values, initial_values
from refcompiler.verifier import infer_types

ROOT = Path(__file__).resolve().parents[3]


def test_every_op_has_a_symbolic_kernel():
    assert set(SYMBOLIC_KERNELS) == set(OPS)


def _symbols(t: Terms, shape: tuple[int, ...], name: str, sort: Sort = Sort.F) -> np.ndarray:
    return np.array([t.sym(f"{name}{i}", sort) for i in range(int(np.prod(shape)))], dtype=np.int64).reshape(shape)


VALID = sorted((ROOT / "examples").glob("*.json")) + [
    p for p in sorted((ROOT / "corpus").glob("*.json")) if '"expect": "pass"' in p.read_text(encoding="utf-8")
]


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_symbolic_kernels_give_the_numpy_kernels_shapes(path: Path):
    graph = load_graph(path)
    types = infer_types(graph)
    values = {**initial_values(graph), **constant_values(graph)}
    for node in graph.nodes:
        def concrete(ref):
            return values[ref.name] if graph.is_storage(ref) else np.zeros(types[(ref.name, ref.result)].shape, dtype=types[(ref.name, ref.result)].dtype.value)
        ins = [concrete(r) for r in node.inputs]
        state = [values[s] for s in node.state]
        if node.op is OpKind.EMBEDDING_UPDATE:
            ins[0] = np.zeros_like(ins[0])
        want, want_state = run_kernel(node.op, ins, state, node.attr_dict())
        t = Terms()
        sym = [_symbols(t, a.shape, f"in{k}_", Sort.I if a.dtype == np.int32 else Sort.F) for k, a in enumerate(ins)]
        sym_state = [_symbols(t, a.shape, f"st{k}_") for k, a in enumerate(state)]
        got, got_state = run_symbolic_kernel(Context(t), node.op, sym, sym_state, node.attr_dict())
        assert [g.shape for g in got] == [w.shape for w in want], node.name
        assert [g.shape for g in got_state] == [w.shape for w in want_state], node.name


def test_moves_are_numpy_on_ids():
    t = Terms()
    x = _symbols(t, (2, 3), "x")
    (y,), _ = run_symbolic_kernel(Context(t), OpKind.TRANSPOSE, [x], [], {"perm": None})
    assert (y == x.T).all() and OpKind.TRANSPOSE in MOVES
    (r,), _ = run_symbolic_kernel(Context(t), OpKind.ROLL, [x], [], {})
    assert (r == np.roll(x, 1, axis=0)).all()


def test_matmul_and_reduce_sum_apply_one_function_per_row_and_column():
    t = Terms()
    a, b = _symbols(t, (2, 3), "a"), _symbols(t, (3, 2), "b")
    (y,), _ = run_symbolic_kernel(Context(t), OpKind.MATMUL, [a, b], [], {})
    assert y.shape == (2, 2) and y[1, 0] == t.app("matmul/3", [*a[1], *b[:, 0]])
    (s,), _ = run_symbolic_kernel(Context(t), OpKind.REDUCE_SUM, [a], [], {"axis": 0, "keepdims": True})
    assert s.shape == (1, 3) and s[0, 2] == t.app("reduce_sum/2", [a[0, 2], a[1, 2]])


def test_embedding_update_selects_rows_and_guards_its_ids():
    t = Terms()
    ctx = Context(t)
    table = _symbols(t, (2, 1), "t")
    grad = _symbols(t, (2, 1), "g")
    same = np.array([t.iconst(1), t.iconst(1)], dtype=np.int64)
    (rows,), (new,) = run_symbolic_kernel(ctx, OpKind.EMBEDDING_UPDATE, [same, grad], [table], {})
    assert rows[0, 0] == rows[1, 0] == table[1, 0]
    # np.add.at adds in index order: both gradients, the first one first
    assert new[1, 0] == t.app("add", (t.app("add", (table[1, 0], grad[0, 0])), grad[1, 0])) and new[0, 0] == table[0, 0]
    assert set(ctx.guards) == {t.true}
    ids = _symbols(t, (2,), "i", Sort.I)
    run_symbolic_kernel(ctx, OpKind.EMBEDDING_UPDATE, [ids, grad], [table], {})
    assert len(set(ctx.guards) - {t.true}) == 2


def test_a_call_made_before_gives_the_same_terms_and_guards_again():
    t = Terms()
    table, grad, ids = _symbols(t, (2, 1), "t"), _symbols(t, (2, 1), "g"), _symbols(t, (2,), "i", Sort.I)
    first, second = Context(t), Context(t)
    (rows1,), (new1,) = run_symbolic_kernel(first, OpKind.EMBEDDING_UPDATE, [ids, grad], [table], {})
    rows1[...] = t.poison_f  # results are the caller's: the remembered ones are not changed
    (rows2,), (new2,) = run_symbolic_kernel(second, OpKind.EMBEDDING_UPDATE, [ids, grad], [table], {})
    assert len(t.kernel_memo) == 1  # the second call was found, not computed
    assert (new2 == new1).all() and rows2[0, 0] != t.poison_f
    assert second.guards == first.guards and len(set(second.guards) - {t.true}) == 2
    (moved,), _ = run_symbolic_kernel(second, OpKind.TRANSPOSE, [table], [], {"perm": None})
    (kept,), _ = run_symbolic_kernel(second, OpKind.TRANSPOSE, [table], [], {"perm": [0, 1]})  # other attributes
    assert moved.shape == (1, 2) and kept.shape == (2, 1) and len(t.kernel_memo) == 3


def test_max_is_interpreted_on_int32_and_uninterpreted_on_float32():
    t = Terms()
    ctx = Context(t)
    ints = np.array([t.iconst(3), t.iconst(-2)], dtype=np.int64)
    other = np.array([t.iconst(-5)], dtype=np.int64)
    (got,), _ = run_symbolic_kernel(ctx, OpKind.MAX, [ints, other], [], {})
    assert got.tolist() == [t.iconst(3), t.iconst(-2)]  # folded: both constants
    a, b = _symbols(t, (2,), "a", Sort.I), _symbols(t, (2,), "b", Sort.I)
    (got,), _ = run_symbolic_kernel(ctx, OpKind.MAX, [a, b], [], {})
    assert all(t.nodes[g][0] == "ite" and t.sort(g) is Sort.I for g in got.tolist())
    x, y = _symbols(t, (2,), "x"), _symbols(t, (2,), "y")
    (got,), _ = run_symbolic_kernel(ctx, OpKind.MAX, [x, y], [], {})
    assert got.tolist() == [t.app("max", (int(p), int(q))) for p, q in zip(x, y)]


def _embedding_update_term_by_term(t: Terms, ids: np.ndarray, grad: np.ndarray, table: np.ndarray) -> None:
    """``embedding_update``'s terms asked for one by one, each condition made again
    where it is used: the order in which the kernel must make its terms."""
    flat = [int(i) for i in ids.reshape(-1)]
    grads = grad.reshape(len(flat), table.shape[1])
    for i in flat:
        t.and_(t.le(t.iconst(0), i), t.le(i, t.iconst(table.shape[0] - 1)))
    for i in flat:
        missing = t.app("embedding_id_out_of_range", ())
        for j in range(table.shape[1]):
            value = missing
            for r in reversed(range(table.shape[0])):
                value = t.ite(t.eq(i, t.iconst(r)), int(table[r, j]), value)
    for r in range(table.shape[0]):
        for j in range(table.shape[1]):
            acc = int(table[r, j])
            for p, i in enumerate(flat):
                acc = t.ite(t.eq(i, t.iconst(r)), t.app("add", (acc, grads[p, j])), acc)


def test_embedding_update_makes_its_terms_in_the_order_they_are_first_asked_for():
    """The kernel asks each id-equals-row condition once: the same terms, made in
    the same order (term ids, and so what Z3 is given, are unchanged)."""
    tables = []
    for kernel in ("kernel", "term by term"):
        t = Terms()
        table, grad, ids = _symbols(t, (3, 2), "t"), _symbols(t, (4, 2), "g"), _symbols(t, (4,), "i", Sort.I)
        ids[1] = ids[3] = t.iconst(2)  # constant ids fold: some conditions are true or false
        if kernel == "kernel":
            run_symbolic_kernel(Context(t), OpKind.EMBEDDING_UPDATE, [ids, grad], [table], {})
        else:
            _embedding_update_term_by_term(t, ids, grad, table)
        tables.append((t.nodes, t.sorts))
    assert tables[0] == tables[1] and len(tables[0][0]) > 80


@pytest.mark.parametrize("op", [OpKind.QUANTIZATION_PROFILE, OpKind.EMBEDDING_UPDATE])
def test_the_terms_kept_from_the_inputs_change_no_term_and_no_order(op):
    """The machine computes these kernels again for each chunk of their in-place
    state, on the same inputs: the terms they keep from the inputs
    (``Terms.part_memo``) give the terms and guards a table that keeps nothing
    makes, in the same order."""
    tables = []
    for keep in (True, False):
        t = Terms()
        ctx = Context(t)
        if op is OpKind.QUANTIZATION_PROFILE:
            ins, attrs = [_symbols(t, (5,), "x")], {"lo": -1.0, "hi": 1.0}
            states = [[_symbols(t, (2,), f"m{k}"), _symbols(t, (3,), f"h{k}")] for k in range(3)]
        else:
            ids = _symbols(t, (3,), "i", Sort.I)
            ids[1] = t.iconst(1)
            ins, attrs = [ids, _symbols(t, (3, 2), "g")], {}
            states = [[_symbols(t, (2, 2), f"t{k}")] for k in range(3)]
        states[1][0][0] = states[0][0][0]  # part of the state as before
        for state in states:
            if not keep:
                t.part_memo.clear()
            t.kernel_memo.clear()  # every call computed
            SYMBOLIC_KERNELS[op](ctx, ins, state, attrs)
        tables.append((t.nodes, t.sorts, ctx.guards))
    assert tables[0] == tables[1] and len(tables[0][0]) > 40
