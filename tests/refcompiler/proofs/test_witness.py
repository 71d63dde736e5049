"""Witness schedules, the adversarial order, and miscompile confirmation."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest

from specs import OpKind

from refcompiler import driver
from refcompiler.deps import check_schedule, dependency_graph
from refcompiler.effects import node_effects
from refcompiler.errors import InvariantViolation, UsageError
from refcompiler.graph import StorageKind
from refcompiler.graph_json import load_graph
from refcompiler.mutants import activate
from refcompiler.proofs import Counterexample, adversarial_schedule, confirm_miscompile, prove, witness_schedules
from refcompiler.proofs.scale import large_graph
from refcompiler.proofs.witness import confirm
from tests.refcompiler.proofs.graphs import graph, node, save, storage

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
PROVE_DATA = ROOT / "tests" / "data" / "prove"


def test_an_ordered_pair_has_no_witness():
    g = load_graph(ROOT / "examples" / "read_then_save.json")
    assert witness_schedules(g, "late", "s") is None
    assert witness_schedules(g, "s", "late") is None


def test_an_unordered_pair_has_two_legal_opposite_orders():
    g = load_graph(PROVE_DATA / "foreign_state.json")
    first, second = witness_schedules(g, "peek", "emb")
    for order in (first, second):
        check_schedule(g, order)
    assert first.index("peek") < first.index("emb")
    assert second.index("emb") < second.index("peek")


def test_witness_arguments_are_checked():
    g = load_graph(PROVE_DATA / "foreign_state.json")
    with pytest.raises(UsageError):
        witness_schedules(g, "emb", "nobody")
    with pytest.raises(UsageError):
        witness_schedules(g, "emb", "emb")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_adversarial_schedule_is_legal(path):
    g = load_graph(path)
    check_schedule(g, adversarial_schedule(g))


def test_the_adversarial_schedule_runs_writers_early_and_readers_late():
    """Without the memory edge, the adversarial order saves A before 'late' reads
    it: the order that exposes the missing edge. With the edge, it is still legal."""
    g = load_graph(ROOT / "examples" / "read_then_save.json")
    with activate("sched-drop-save-war"):
        order = adversarial_schedule(g)
    assert order.index("s") < order.index("late")
    correct = adversarial_schedule(g)
    assert correct.index("late") < correct.index("s")


def test_the_adversarial_schedule_never_delays_a_ready_writer_and_moves_writers_earlier():
    g = large_graph(300, seed=1)
    order = adversarial_schedule(g)
    check_schedule(g, order)
    deps = dependency_graph(g)
    writers = {n for n, e in node_effects(g).items() if e.writes}
    done: set[str] = set()
    for name in order:
        ready_writers = [w for w in writers - done if all(p in done for p in deps.predecessors(w))]
        assert not ready_writers or name in writers, (name, ready_writers)
        done.add(name)
    baseline = tuple(nx.lexicographical_topological_sort(deps, key=g.creation_order.__getitem__))

    def mean_position(schedule):
        position = {n: i for i, n in enumerate(schedule)}
        return sum(position[n] for n in writers) / len(writers)

    assert mean_position(order) < mean_position(baseline)


def test_adversarial_schedule_of_a_cyclic_graph_is_sch1():
    from refcompiler import deps
    from refcompiler.variants import installed

    g = load_graph(ROOT / "examples" / "read_then_save.json")
    with installed({deps.memory_edges: lambda graph: [("sum", "s", "A"), ("s", "sum", "A")]}):
        with pytest.raises(InvariantViolation) as e:
            adversarial_schedule(g)
    assert e.value.invariant == "SCH-1"


@pytest.mark.parametrize("name", ["foreign_state", "two_saves", "save_into_constant"])
def test_an_invalid_graph_is_undefined(name):
    g = load_graph(PROVE_DATA / f"{name}.json")
    proof = prove(g)
    assert confirm_miscompile(g, proof.counterexample) == "undefined"


def test_a_dropped_memory_edge_is_a_confirmed_miscompile():
    """Under sched-drop-save-war the witness saves A before 'late' reads it; the
    compiled pipeline does not reproduce the reference (its IR verifier sees IR-4)."""
    g = load_graph(ROOT / "examples" / "read_then_save.json")
    with activate("sched-drop-save-war"):
        cex = prove(g).counterexample
        result = confirm(g, cex)
    assert result.outcome == "miscompile"
    assert "IR-4" in result.detail


def test_two_legal_schedules_of_a_valid_graph_give_the_same_result():
    g = load_graph(ROOT / "examples" / "sgd_momentum.json")
    a, b = "save_loss", "save_w"  # unrelated nodes: both orders are legal
    cex = Counterexample("loss", (a, b), witness_schedules(g, a, b))
    for pipeline in ("O0", "O2"):
        assert confirm_miscompile(g, cex, pipeline=pipeline) == "same"


def test_a_wrong_value_under_one_schedule_is_a_miscompile():
    """A stencil declared in place (mutant inplace-stencil) overwrites its input
    while reading it: O2 computes a wrong value and the comparison catches it."""
    P = StorageKind.PLACEHOLDER
    g = graph(
        "stencil",
        [storage("X", P), storage("out", P), storage("other", P)],
        [
            node("x", OpKind.NEG, "X"),
            node("r", OpKind.ROLL, "x"),
            node("z", OpKind.RELU, "r"),
            save("save_z", "z", "out"),
            node("y", OpKind.RELU, "X"),
            save("save_y", "y", "other"),
        ],
    )
    cex = Counterexample("X", ("x", "y"), witness_schedules(g, "x", "y"))
    assert confirm_miscompile(g, cex, pipeline="O2") == "same"
    with activate("inplace-stencil"):
        result = confirm(g, cex, pipeline="O2")
    assert result.outcome == "miscompile"
    assert "'out'" in result.detail


def test_a_result_that_differs_between_schedules_is_a_miscompile(monkeypatch):
    """The comparison itself: a run that returns a different value for one
    schedule (stubbed here, so that the check is exercised in isolation)."""
    import numpy as np

    g = load_graph(ROOT / "examples" / "sgd_momentum.json")
    cex = Counterexample("loss", ("save_loss", "save_w"), witness_schedules(g, "save_loss", "save_w"))
    honest = driver.run_compiled
    calls = []

    def second_run_wrong(compiled, inputs=None, *, runs=1):
        values = honest(compiled, inputs, runs=runs)
        calls.append(compiled.schedule)
        if len(calls) == 2:
            values["loss"] = values["loss"] + np.float32(1)
        return values

    monkeypatch.setattr(driver, "run_compiled", second_run_wrong)
    result = confirm(g, cex)
    assert result.outcome == "miscompile"
    assert "schedule 2" in result.detail and "'loss'" in result.detail


def _networkx_reading(problem, positions):  # type: ignore[no-untyped-def]
    """What schedule_from_positions gave when it broke ties with networkx's sort."""
    topo = {n: i for i, n in enumerate(nx.lexicographical_topological_sort(problem.deps, key=problem.graph.creation_order.__getitem__))}
    return tuple(sorted(topo, key=lambda n: (positions[n], topo[n])))


@pytest.mark.parametrize("seed", range(3))
def test_a_model_s_ties_are_broken_as_networkx_s_lexicographical_sort_broke_them(seed):
    import random

    from refcompiler.proofs.conflicts import prepare
    from refcompiler.proofs.witness import schedule_from_positions

    problems = [prepare(load_graph(p)) for p in EXAMPLES] + [prepare(large_graph(120, seed=seed))]
    rng = random.Random(seed)
    for problem in problems:
        for spread in (1, 3, len(problem.graph.nodes)):  # one position for all, a few, about one each
            positions = {n: rng.randrange(spread) for n in problem.deps}
            assert schedule_from_positions(problem, positions) == _networkx_reading(problem, positions)
    tied = {n: 0 for n in problems[-1].deps}
    check_schedule(problems[-1].graph, schedule_from_positions(problems[-1], tied))
