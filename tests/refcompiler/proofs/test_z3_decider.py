"""The Z3 decider in a child process: a large problem with a deadline is decided
there, with the answer the decider gives in this process, and stopped at the
deadline when Z3 runs past it (its difference-logic solver does not poll its
time limit)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from refcompiler.graph_json import load_graph
from refcompiler.proofs import z3_decider
from refcompiler.proofs.conflicts import Order, prepare

ROOT = Path(__file__).resolve().parents[3]


def _problem(name: str):
    return prepare(load_graph(ROOT / "tests" / "data" / "prove" / name))


def test_a_child_decides_as_this_process_does(monkeypatch):
    problem = _problem("foreign_state.json")
    here = z3_decider.decide(problem, deadline=time.monotonic() + 60)
    monkeypatch.setattr(z3_decider, "CHILD_NODES", 1)
    there = z3_decider.decide(problem, deadline=time.monotonic() + 60)
    assert there.orders == here.orders and there.witness == here.witness and Order.UNORDERED in there.orders.values()


def test_a_child_past_the_deadline_is_stopped_and_its_pairs_undecided(monkeypatch):
    monkeypatch.setattr(z3_decider, "CHILD_NODES", 1)
    monkeypatch.setattr(z3_decider, "GRACE", 0.2)
    monkeypatch.setattr(z3_decider, "_decide", lambda problem, deadline: time.sleep(60))  # Z3 ignoring its limit
    problem = _problem("foreign_state.json")
    start = time.monotonic()
    decision = z3_decider.decide(problem, deadline=start + 0.3)
    assert time.monotonic() - start < 30  # not the minute the child would take
    assert set(decision.orders.values()) == {Order.UNKNOWN} and decision.detail == "Z3 ran past the time limit and was stopped"


def test_an_error_in_the_child_is_raised_here(monkeypatch):
    def broken(problem, deadline):
        raise ValueError("z3 broke")

    monkeypatch.setattr(z3_decider, "CHILD_NODES", 1)
    monkeypatch.setattr(z3_decider, "_decide", broken)
    try:
        z3_decider.decide(_problem("foreign_state.json"), deadline=time.monotonic() + 60)
    except ValueError as e:
        assert str(e) == "z3 broke"
    else:
        raise AssertionError("the child's error was not raised")


def test_a_child_that_dies_leaves_its_pairs_undecided_and_says_how_it_ended(monkeypatch):
    monkeypatch.setattr(z3_decider, "CHILD_NODES", 1)
    monkeypatch.setattr(z3_decider, "_decide", lambda problem, deadline: os._exit(3))  # out of memory, say
    decision = z3_decider.decide(_problem("foreign_state.json"), deadline=time.monotonic() + 60)
    assert set(decision.orders.values()) == {Order.UNKNOWN} and decision.detail == "the Z3 process ended with exit code 3 before it decided"
