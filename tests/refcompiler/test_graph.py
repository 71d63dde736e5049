"""``refcompiler.graph``: the initial values, made once per storage object."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from specs import Dtype

from refcompiler.graph import Init, Storage, StorageKind, _make_initial, initial_value


@pytest.mark.parametrize(
    "storage",
    [
        Storage("a", StorageKind.OWNED, Dtype.FLOAT32, (2, 3), Init(seed=11)),
        Storage("b", StorageKind.PLACEHOLDER, Dtype.INT32, (4,), Init(seed=5, low=2, high=9)),
        Storage("c", StorageKind.CONSTANT, Dtype.FLOAT32, (2,), Init(value=(1.5, -2.0))),
        Storage("d", StorageKind.OWNED, Dtype.INT32, ()),
    ],
)
def test_each_call_gives_a_fresh_array_equal_to_a_new_derivation(storage):
    first = initial_value(storage)
    want = _make_initial(storage)
    assert first.dtype == want.dtype and first.shape == want.shape and first.tobytes() == want.tobytes()
    first[...] = 7  # a caller writing its copy changes nobody else's
    again = initial_value(storage)
    assert again.flags.writeable and again is not first
    assert again.tobytes() == want.tobytes()


def test_the_value_is_made_once_per_storage_object():
    s = Storage("a", StorageKind.OWNED, Dtype.FLOAT32, (3,), Init(seed=1))
    initial_value(s)
    kept = s.__dict__["_initial"]
    initial_value(s)
    assert s.__dict__["_initial"] is kept and not kept.flags.writeable


def test_a_pickled_storage_leaves_its_value_behind():
    s = Storage("a", StorageKind.OWNED, Dtype.FLOAT32, (3,), Init(seed=1))
    initial_value(s)
    back = pickle.loads(pickle.dumps(s))
    assert back == s and "_initial" not in back.__dict__
    np.testing.assert_array_equal(initial_value(back), initial_value(s))
