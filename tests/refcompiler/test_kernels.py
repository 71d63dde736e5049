"""``kernels.prepared``: the kernel a step binds once gives what ``run_kernel`` gives."""

from __future__ import annotations

import numpy as np
import pytest

from specs import OPS, OpKind

from refcompiler.kernels import prepared, run_kernel

from tests.specs.test_ops import SAMPLES, array_of, full_attrs


def _arguments(kind: OpKind):  # type: ignore[no-untyped-def]
    inputs, state, given = SAMPLES[kind]
    rng = np.random.default_rng(1)
    return [array_of(tt, rng) for tt in inputs], [array_of(tt, rng) for tt in state], full_attrs(OPS[kind], given)


@pytest.mark.parametrize("kind", list(OpKind), ids=lambda k: k.value)
def test_a_prepared_kernel_gives_the_bits_run_kernel_gives(kind: OpKind) -> None:
    ins, state, attrs = _arguments(kind)
    results, new_state = run_kernel(kind, ins, state, attrs)
    with np.errstate(all="ignore"):
        got = prepared(kind, attrs)(ins, state)
    want = (*results, *new_state)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert type(g) is np.ndarray and g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes()


def test_a_prepared_kernel_missing_an_attribute_fails_when_run_as_run_kernel_does() -> None:
    ins, state, _ = _arguments(OpKind.TRANSPOSE)
    kernel = prepared(OpKind.TRANSPOSE, {})  # no "perm": made without complaint, as run_kernel is called
    with pytest.raises(KeyError):
        kernel(ins, state)
    with pytest.raises(KeyError):
        run_kernel(OpKind.TRANSPOSE, ins, state, {})


@pytest.mark.parametrize("shape", [(1,), (4,), (0,), (0, 2), (3, 2), (2, 3, 1), (5, 0)])
def test_roll_gives_the_bits_np_roll_gives(shape: tuple[int, ...]) -> None:
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    (got,), _ = run_kernel(OpKind.ROLL, [x], [], {})
    want = np.roll(x, 1, axis=0)
    assert got.shape == want.shape and got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.parametrize(("ids", "first_bad"), [([0, 3, -1], 3), ([[-2, 1]], -2), ([1, 0, 2, 1], None), ([], None)])
def test_embedding_update_names_the_first_id_out_of_range(ids: list[int], first_bad: int | None) -> None:
    from refcompiler.errors import ExecutionError

    index = np.array(ids, np.int32)
    grad, table = np.ones(index.shape + (2,), np.float32), np.arange(6, dtype=np.float32).reshape(3, 2)
    if first_bad is None:
        (looked_up,), (new_table,) = run_kernel(OpKind.EMBEDDING_UPDATE, [index, grad], [table], {})
        want = table.copy()
        np.add.at(want, index, grad)
        assert looked_up.tobytes() == table[index].tobytes() and new_table.tobytes() == want.tobytes()
    else:
        with pytest.raises(ExecutionError, match=f"embedding id {first_bad} is out of range for a table of 3 rows"):
            run_kernel(OpKind.EMBEDDING_UPDATE, [index, grad], [table], {})
