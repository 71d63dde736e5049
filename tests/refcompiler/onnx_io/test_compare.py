"""The ULP distance and the stated bounds."""

from __future__ import annotations

import numpy as np

from refcompiler.onnx_io.compare import ULP_BOUND, ulp_distance, within


def test_ulp_distance_counts_representable_floats_across_zero():
    one = np.array([1.0], np.float32)
    assert ulp_distance(np.nextafter(one, np.float32(2)), one) == 1
    tiny = np.array([np.finfo(np.float32).smallest_subnormal], np.float32)
    assert ulp_distance(tiny, -tiny) == 2
    assert ulp_distance(np.array([np.nan], np.float32), np.array([1.0], np.float32)) == 2**32


def test_exact_means_bit_for_bit_and_the_bound_bites():
    x = np.array([1.0, 2.0], np.float32)
    near = x.view(np.int32) + np.int32(ULP_BOUND)
    far = x.view(np.int32) + np.int32(ULP_BOUND * 1000)
    assert within(x, x.copy(), exact=True) == (True, 0)
    assert not within(near.view(np.float32), x, exact=True)[0]
    assert within(near.view(np.float32), x, exact=False) == (True, ULP_BOUND)
    assert not within(far.view(np.float32), x, exact=False)[0]
    assert not within(x.astype(np.float64), x, exact=False)[0]
