"""``prove``: verdicts, witnesses, engines, timeouts, and the internal-error guard."""

from __future__ import annotations

from pathlib import Path

import pytest

from specs import OpKind

from refcompiler.deps import check_schedule
from refcompiler.errors import InternalError, InvariantViolation, UsageError
from refcompiler.graph import StorageKind
from refcompiler.graph_json import load_graph
from refcompiler.mutants import activate
from refcompiler.proofs import Counterexample, Proof, Verdict, prove
from refcompiler.proofs import proof as proof_module
from refcompiler.proofs import reach
from refcompiler.proofs.conflicts import Decision, Order, prepare
from refcompiler.proofs.scale import large_graph
from tests.refcompiler.proofs.graphs import graph, node, storage

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
PROVE_DATA = ROOT / "tests" / "data" / "prove"
ENGINES = ("reach", "z3", "both", "enumerate")


def _assert_witness(graph, proof: Proof) -> None:
    cex = proof.counterexample
    assert isinstance(cex, Counterexample)
    a, b = cex.nodes
    first, second = cex.schedules
    prepared = prepare(graph).graph
    for order in (first, second):
        assert sorted(order) == sorted(n.name for n in prepared.nodes)
        check_schedule(prepared, order)
    assert first.index(a) < first.index(b)
    assert second.index(b) < second.index(a)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
@pytest.mark.parametrize("engine", ENGINES)
def test_every_example_is_proved(path, engine):
    proof = prove(load_graph(path), engine=engine)
    assert proof.verdict is Verdict.PROVED, proof.detail
    assert proof.counterexample is None
    assert proof.engine == engine


@pytest.mark.parametrize("engine", ENGINES)
def test_dropped_save_edges_give_a_counterexample(engine):
    """The mutant sched-drop-save-war removes reader -> save edges: 'late' reads A,
    which 's' saves, and nothing orders them any more."""
    g = load_graph(ROOT / "examples" / "read_then_save.json")
    with activate("sched-drop-save-war"):
        proof = prove(g, engine=engine)
        assert proof.verdict is Verdict.COUNTEREXAMPLE
        assert proof.counterexample.storage == "A"
        assert set(proof.counterexample.nodes) == {"s", "late"}
        _assert_witness(g, proof)
    assert prove(g, engine=engine).verdict is Verdict.PROVED


@pytest.mark.parametrize(
    ("name", "pair", "storage_name"),
    [
        ("foreign_state", ("emb", "peek"), "table"),
        ("two_saves", ("save_sum", "save_negw"), "A"),
        ("save_into_constant", ("scaled", "clobber"), "W"),
    ],
)
@pytest.mark.parametrize("engine", ENGINES)
def test_ownership_breaks_give_counterexamples(name, pair, storage_name, engine):
    g = load_graph(PROVE_DATA / f"{name}.json")
    proof = prove(g, engine=engine)
    assert proof.verdict is Verdict.COUNTEREXAMPLE
    assert proof.counterexample.nodes == pair
    assert proof.counterexample.storage == storage_name
    _assert_witness(g, proof)


def test_a_save_cycle_is_broken_first_and_proved():
    g = load_graph(PROVE_DATA / "save_cycle.json")
    proof = prove(g)
    assert proof.verdict is Verdict.PROVED
    assert "break_save_cycles" in proof.detail


def test_a_data_cycle_has_no_schedule():
    g = graph("cycle", [storage("P", StorageKind.PLACEHOLDER)], [node("x", OpKind.RELU, "y"), node("y", OpKind.RELU, "x")])
    with pytest.raises(InvariantViolation) as e:
        prove(g)
    assert e.value.invariant == "G-1"


def test_a_memory_cycle_left_after_rewriting_is_sch1():
    """A dependency model that closes a cycle break_save_cycles cannot open
    (here: a swapped-in model with an edge back from a save) is SCH-1."""
    from refcompiler import deps
    from refcompiler.variants import installed

    g = load_graph(ROOT / "examples" / "read_then_save.json")
    with installed({deps.memory_edges: lambda graph: [("sum", "s", "A"), ("s", "sum", "A")]}):
        with pytest.raises(InvariantViolation) as e:
            prove(g)
    assert e.value.invariant == "SCH-1"


def test_an_owner_conflicts_with_no_one_when_valid():
    g = load_graph(ROOT / "examples" / "embedding_update.json")
    assert prove(g).pairs_checked == 0


@pytest.mark.parametrize("engine", ("z3", "both", "enumerate"))
def test_a_timeout_is_inconclusive_never_proved(engine):
    proof = prove(large_graph(300), engine=engine, timeout=1e-9)
    assert proof.verdict is Verdict.INCONCLUSIVE
    assert proof.counterexample is None
    assert proof.pairs_checked == 0


def test_reach_ignores_the_timeout_because_it_is_complete():
    assert prove(large_graph(300), engine="reach", timeout=1e-9).verdict is Verdict.PROVED


def test_bad_arguments_are_usage_errors():
    g = large_graph(5)
    with pytest.raises(UsageError):
        prove(g, engine="dfs")
    with pytest.raises(UsageError):
        prove(g, timeout=0)


def test_disagreeing_deciders_are_an_internal_error(monkeypatch):
    """'both' guards the suite itself: a decider that calls an ordered pair
    unordered (here a broken reach) must stop the proof."""
    g = load_graph(ROOT / "examples" / "read_then_save.json")
    honest = reach.decide

    def broken(problem, *, deadline=None):
        right = honest(problem)
        return Decision("reach", {p: Order.UNORDERED for p in right.orders}, None)

    monkeypatch.setattr(reach, "decide", broken)
    with pytest.raises(InternalError, match="disagree"):
        prove(g, engine="both")


def test_an_illegal_witness_is_an_internal_error(monkeypatch):
    g = load_graph(ROOT / "examples" / "read_then_save.json")

    def lying(problem, *, deadline=None):
        pairs = problem.pairs
        backwards = tuple(reversed([n.name for n in problem.graph.nodes]))
        return Decision("z3", {p: Order.UNORDERED for p in pairs}, (backwards, backwards))

    monkeypatch.setitem(proof_module.ENGINES, "z3", lying)
    with pytest.raises(InternalError, match="illegal"):
        prove(g, engine="z3")


def test_pairs_checked_counts_node_pairs_not_storages():
    """'prof' (invalid: placeholders as state) writes P and Q, which 'r' reads:
    two conflicts, one pair; nothing orders them."""
    stores = [storage("P", StorageKind.PLACEHOLDER), storage("Q", StorageKind.PLACEHOLDER), storage("X", StorageKind.PLACEHOLDER)]
    nodes = [node("r", OpKind.ADD, "P", "Q"), node("prof", OpKind.QUANTIZATION_PROFILE, "X", state=("P", "Q"))]
    g = graph("g", stores, nodes)
    proof = prove(g)
    assert proof.pairs_checked == 1
    assert proof.verdict is Verdict.COUNTEREXAMPLE
    assert proof.counterexample.storage == "P"  # the first storage of the pair, by name


def test_large_generated_graphs_are_proved_by_both_engines():
    proof = prove(large_graph(1000, seed=3), engine="both")
    assert proof.verdict is Verdict.PROVED
    assert proof.pairs_checked > 100
