"""Judging a target's results against the reference: the slack of an inexact
cone follows what the cone reads, constants included, and the length of its
longest reduction."""

from __future__ import annotations

import numpy as np

from specs import Dtype, OpKind

from fuzz.oracle.context import reference_runs
from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind, freeze_attrs
from refcompiler.targets.base import ConfigRun, Configuration, Outcome
from refcompiler.targets.verdict import Kind, judge
from refcompiler.values import initial_values

# -c + tanh(c) for a constant c near 0.126: about -6.6e-4, where one ULP of tanh(c) is hundreds of the result's
GRAPH = Graph(
    name="cancel",
    storage=(
        Storage("c", StorageKind.CONSTANT, Dtype.FLOAT32, (1,), init=Init(value=(0.1256,))),
        Storage("p", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (1,), init=Init(seed=1)),
    ),
    nodes=(
        Node("n", OpKind.NEG, (Ref("c"),)),
        Node("t", OpKind.TANH, (Ref("c"),)),
        Node("a", OpKind.ADD, (Ref("n"), Ref("t"))),
        Node("s", OpKind.SAVE, (Ref("a"),), attrs=freeze_attrs({"target": "p"})),
    ),
)


# the sum of 270 values, reshaped and saved: summed in another order, about one rounding of the largest per term
SUM = Graph(
    name="sum",
    storage=(
        Storage("x", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (27, 10), init=Init(seed=3)),
        Storage("p", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (1,), init=Init(seed=1)),
    ),
    nodes=(
        Node("r", OpKind.REDUCE_SUM, (Ref("x"),)),
        Node("v", OpKind.RESHAPE, (Ref("r"),), attrs=freeze_attrs({"shape": [1]})),
        Node("s", OpKind.SAVE, (Ref("v"),), attrs=freeze_attrs({"target": "p"})),
    ),
)


def _judged(shift: float, graph: Graph = GRAPH):
    reference = reference_runs(graph)
    runs = [{k: v + np.float32(shift) if k == "p" else v for k, v in r.items()} for r in reference]
    outcome = Outcome(results=[ConfigRun(Configuration("base", "one"), runs)], entry=initial_values(graph))
    return judge(graph, outcome, reference)


def test_a_cancelling_cone_over_a_constant_owes_the_slack_of_the_constant():
    # one ULP of tanh(0.1256) is 7.5e-9: 2e-8 is within the slack of 2**-20 * 0.1256, hundreds of the result's ULPs
    assert _judged(2e-8) is None


def test_beyond_that_slack_it_is_a_reference_discrepancy():
    d = _judged(1e-6)
    assert d is not None and d.kind is Kind.REFERENCE and d.storage == "p"


def test_a_long_reduction_owes_a_slack_that_grows_with_its_terms():
    # onnxruntime's sum of 270 values was 72 ULPs (4.7e-6) from numpy's: ordinary float32 error, reported as TGT-1
    largest = float(np.abs(initial_values(SUM)["x"]).max())
    assert 2**-20 * largest < 2e-5 < 2**-23 * 270 * largest  # beyond the fixed slack, within one rounding per term
    assert _judged(2e-5, SUM) is None
    d = _judged(1e-3, SUM)
    assert d is not None and d.kind is Kind.REFERENCE


def test_a_discrepancy_shows_the_first_element_that_differs_and_an_integers_values():
    # an int32 max compared as unsigned said "(0 ULPs; owed bit for bit)", as if the values agreed
    ids = Graph(
        name="ids",
        storage=(
            Storage("x", StorageKind.PLACEHOLDER, Dtype.INT32, (3,), init=Init(value=(-2, 5, 1))),
            Storage("p", StorageKind.PLACEHOLDER, Dtype.INT32, (3,), init=Init(value=(0, 0, 0))),
        ),
        nodes=(Node("s", OpKind.SAVE, (Ref("x"),), attrs=freeze_attrs({"target": "p"})),),
    )
    reference = reference_runs(ids)
    wrong = [{k: np.array([-2, 5, 7], np.int32) if k == "p" else v for k, v in r.items()} for r in reference]
    outcome = Outcome(results=[ConfigRun(Configuration("base", "one"), wrong)], entry=initial_values(ids))
    d = judge(ids, outcome, reference)
    assert d is not None and d.detail == "'p' after run 1: base differs from the reference (at [2] got 7, want 1)"
    d = _judged(1e-3)
    assert d is not None and "ULPs apart at most; at [0] got " in d.detail


def test_a_difference_after_run_two_only_says_run_one_agreed():
    # a target that starts every run from the initial owned state said only "after run 2"
    acc = Graph(
        name="acc",
        storage=(
            Storage("x", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (1,), init=Init(value=(1.0,))),
            Storage("a", StorageKind.OWNED, Dtype.FLOAT32, (1,), owner="n"),
        ),
        nodes=(Node("n", OpKind.ACCUMULATE, (Ref("x"),), state=("a",)),),
    )
    reference = reference_runs(acc)
    fresh = [reference[0], reference[0]]  # run 2 from the initial state again: what run 1 gave
    outcome = Outcome(results=[ConfigRun(Configuration("base", "one"), fresh)], entry=initial_values(acc))
    d = judge(acc, outcome, reference)
    assert d is not None and d.detail.startswith("'a' after run 2: base differs from the reference (")
    assert d.detail.endswith("; every value agreed after run 1, so run 2 started from the right values: is state carried from one run to the next?")
    d = _judged(1e-3)  # a difference after run 1 says nothing of the kind
    assert d is not None and "agreed after run" not in d.detail
