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
