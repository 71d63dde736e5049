"""Judging a target's results against the reference: the slack of an inexact
cone follows what the cone reads, constants included."""

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


def _judged(shift: float):
    reference = reference_runs(GRAPH)
    runs = [{k: v + np.float32(shift) if k == "p" else v for k, v in r.items()} for r in reference]
    outcome = Outcome(results=[ConfigRun(Configuration("base", "one"), runs)], entry=initial_values(GRAPH))
    return judge(GRAPH, outcome, reference)


def test_a_cancelling_cone_over_a_constant_owes_the_slack_of_the_constant():
    # one ULP of tanh(0.1256) is 7.5e-9: 2e-8 is within the slack of 2**-20 * 0.1256, hundreds of the result's ULPs
    assert _judged(2e-8) is None


def test_beyond_that_slack_it_is_a_reference_discrepancy():
    d = _judged(1e-6)
    assert d is not None and d.kind is Kind.REFERENCE and d.storage == "p"
