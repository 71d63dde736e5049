"""How results from another implementation are compared with refc's.

Bit for bit (``same_bits``) where the op is exact in float32: add, sub, mul,
max, neg, relu, identity, transpose, concat, reshape and the data movement of
the exporter's lowerings. Elsewhere (tanh, exp, matmul, gemm, reduce_sum)
within ``ULP_BOUND`` units in the last place of float32, counted on the
ordered integer line of float32 bit patterns; NaN must meet NaN and signed
infinities must match. A reduction or a product summed in another order can
lose low bits to cancellation, so next to the ULP count an absolute slack of
``ABS_SLACK`` times the largest magnitude of the expected tensor is allowed;
a result that passes only by that slack is still reported with its ULPs.
"""

from __future__ import annotations

import numpy as np

from refcompiler.values import same_bits

__all__ = ["EXACT_ONNX_OPS", "ULP_BOUND", "ABS_SLACK", "ulp_distance", "within"]

# ONNX op types whose results refc must reproduce bit for bit.
EXACT_ONNX_OPS = frozenset({"Add", "Sub", "Mul", "Max", "Neg", "Relu", "Identity", "Transpose", "Concat", "Reshape", "Cast", "Constant"})
ULP_BOUND = 8
ABS_SLACK = 2.0**-20


def _ordered(a: np.ndarray) -> np.ndarray:
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.int32).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


def ulp_distance(got: np.ndarray, want: np.ndarray) -> int:
    """The largest ULP distance between two float32 tensors of one shape (0 for an
    exact match; a huge number when NaNs or infinities do not line up)."""
    if got.size == 0:
        return 0
    gn, wn = np.isnan(got), np.isnan(want)
    if (gn != wn).any():
        return 2**32
    d = np.abs(_ordered(np.where(gn, 0, got)) - _ordered(np.where(wn, 0, want)))
    return int(d.max())


def within(got: np.ndarray, want: np.ndarray, *, exact: bool) -> tuple[bool, int]:
    """(agree, ULP distance) of ``got`` with ``want`` under the stated rule."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return False, 2**32
    if exact or got.dtype != np.float32:
        ok = same_bits(got, want)
        return ok, 0 if ok or got.dtype != np.float32 else ulp_distance(got, want)
    ulps = ulp_distance(got, want)
    if ulps <= ULP_BOUND:
        return True, ulps
    finite = np.isfinite(want)
    scale = float(np.abs(want[finite]).max()) if finite.any() else 0.0
    with np.errstate(invalid="ignore"):
        close = np.abs(got.astype(np.float64) - want.astype(np.float64)) <= ABS_SLACK * scale
    same_special = np.array_equal(np.where(finite, 0, got), np.where(finite, 0, want), equal_nan=True)
    return bool(same_special and close[finite].all()), ulps
