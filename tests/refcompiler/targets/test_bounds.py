"""What a target owes per op: exact cones bit for bit (up to the sign of a zero
behind max/relu, and NaN payloads), inexact ones within compounding bounds."""

from __future__ import annotations

import numpy as np

from specs import OpKind

from refcompiler.targets.bounds import EXACT_OPS, agree, bound_for

F = np.float32


def test_an_exact_cone_is_bit_for_bit_and_one_ulp_fails():
    a = np.array([1.0, 2.0], F)
    assert agree(a, a.copy(), frozenset({OpKind.ADD}))[0]
    assert not agree(np.nextafter(a, F(9)), a, frozenset({OpKind.ADD}))[0]


def test_zero_signs_are_free_only_behind_max_or_relu_and_nan_payloads_always_against_the_reference():
    pos, neg = np.array([0.0], F), np.array([-0.0], F)
    assert agree(pos, neg, frozenset({OpKind.MAX}))[0]
    assert not agree(pos, neg, frozenset({OpKind.ADD}))[0]
    quiet, payload = np.array([np.nan], F), np.array([0x7FC00001], np.uint32).view(F)
    assert agree(quiet, payload, frozenset({OpKind.ADD}))[0]
    assert not agree(quiet, payload, frozenset({OpKind.ADD}), bitwise=True)[0]


def test_inexact_bounds_grow_with_inexact_nodes_and_runs():
    assert bound_for(1, 1) == 1 and bound_for(2, 1) == 8 and bound_for(1, 2) == 8
    want = np.array([1.0], F)
    ten_ulps = np.array([np.frombuffer((np.array([1.0], F).view(np.int32) + 10).tobytes(), F)[0]], F)
    assert not agree(ten_ulps, want, frozenset({OpKind.TANH}))[0]
    assert agree(ten_ulps, want, frozenset({OpKind.TANH}), factor=bound_for(2, 1))[0]
    assert OpKind.TANH not in EXACT_OPS and OpKind.ADD in EXACT_OPS


def test_the_slack_follows_the_magnitude_the_cone_read():
    # x - tanh(x) for a small x cancels: an error of tanh relative to x is many ULPs of the result
    got, want = np.array([0.05389076], F), np.array([0.05389071], F)
    ops = frozenset({OpKind.TANH, OpKind.SUB})
    assert not agree(got, want, ops)[0]
    assert agree(got, want, ops, scale=1.0)[0]
