"""SEM-1 by differential execution: every compiled program, under every built-in
scheduler and both pipelines, run twice, gives bit for bit what the reference
interpreter gives (``run_reference(graph, runs=2)``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given

from specs import Dtype, OpKind

from refcompiler.deps import check_schedule
from refcompiler.driver import compile_graph, run_compiled
from refcompiler.errors import InvariantViolation, MalformedInput
from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind, initial_value
from refcompiler.graph_json import load_graph, read_json
from refcompiler.ir_text import print_program
from refcompiler.reference import run_reference
from refcompiler.values import same_bits
from tests.refcompiler.local_graphs import graphs

ROOT = Path(__file__).resolve().parents[2]
SCHEDULES = [("topo", 0), ("memory", 0)] + [("random", seed) for seed in range(5)]
PIPELINES = ["O0", "O2"]


def _expects_pass(path: Path) -> bool:
    doc = read_json(path)
    return isinstance(doc, dict) and doc.get("expect", "pass") == "pass"


CASES = sorted(ROOT.glob("examples/*.json")) + [p for p in sorted(ROOT.glob("corpus/*.json")) if _expects_pass(p)]


def assert_matches_reference(graph: Graph, reference: dict, **compile_options: object) -> None:
    compiled = compile_graph(graph, **compile_options)  # type: ignore[arg-type]
    check_schedule(compiled.scheduled_graph, compiled.schedule)
    got = run_compiled(compiled, runs=2)
    assert sorted(got) == sorted(reference)
    for name, want in reference.items():
        assert same_bits(got[name], want), f"{name} differs from the reference ({compile_options})"


def test_there_are_cases() -> None:
    assert len(CASES) >= 4


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_cases_match_reference(path: Path) -> None:
    graph = load_graph(path)
    reference = run_reference(graph, runs=2)
    for pipeline in PIPELINES:
        for scheduler, seed in SCHEDULES:
            assert_matches_reference(graph, reference, scheduler=scheduler, seed=seed, pipeline=pipeline)
        schedule = dict(graph.meta).get("schedule")
        if schedule is not None:
            assert_matches_reference(graph, reference, schedule=schedule, pipeline=pipeline)


@given(graphs())
def test_random_graphs_match_reference(graph: Graph) -> None:
    reference = run_reference(graph, runs=2)
    for pipeline in PIPELINES:
        for scheduler, seed in SCHEDULES:
            assert_matches_reference(graph, reference, scheduler=scheduler, seed=seed, pipeline=pipeline)


def test_a_second_run_differs_from_the_first_where_state_persists() -> None:
    # the two-run comparison is meaningful: a program that forgot its state
    # between runs would give the one-run values
    graph = load_graph(ROOT / "examples" / "quantization_profile.json")
    compiled = compile_graph(graph)
    once, twice = run_compiled(compiled, runs=1), run_compiled(compiled, runs=2)
    assert not same_bits(once["hist"], twice["hist"])
    assert same_bits(twice["hist"], run_reference(graph, runs=2)["hist"])


# -- the driver's explicit schedules ---------------------------------------------------

SWAP = Graph(
    "swap",
    storage=(
        Storage("P", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (4,), Init(seed=1)),
        Storage("Q", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (4,), Init(seed=2)),
    ),
    nodes=(
        Node("dead", OpKind.RELU, (Ref("P"),)),
        Node("s1", OpKind.SAVE, (Ref("P"),), attrs=(("target", "Q"),)),
        Node("s2", OpKind.SAVE, (Ref("Q"),), attrs=(("target", "P"),)),
    ),
)


def test_an_explicit_schedule_may_omit_dead_nodes_and_gets_the_save_copies() -> None:
    # the saves read each other's targets: break_save_cycles gives each a copy
    compiled = compile_graph(SWAP, schedule=["s1", "s2"])
    assert "dead" not in compiled.scheduled_graph.node_by_name
    assert compiled.schedule == ("s2.copy", "s1.copy", "s1", "s2")
    got, want = run_compiled(compiled, runs=2), run_reference(SWAP, runs=2)
    assert all(same_bits(got[k], want[k]) for k in want)
    once = run_compiled(compiled)
    p0, q0 = (initial_value(s) for s in SWAP.storage)
    assert same_bits(once["P"], q0) and same_bits(once["Q"], p0)
    # naming the dead node is fine too
    assert compile_graph(SWAP, schedule=["dead", "s1", "s2"]).schedule == compiled.schedule


@pytest.mark.parametrize(
    "schedule,needle",
    [
        (["save_late", "sum", "s", "late"], "violating the data edge late -> save_late"),
        (["sum", "s", "late", "save_late"], "reads 'A' before it is saved"),
        (["sum", "late", "s"], "missing: save_late"),
        (["sum", "late", "s", "save_late", "ghost"], "unknown: ghost"),
    ],
)
def test_an_illegal_explicit_schedule_is_sch1(schedule: list[str], needle: str) -> None:
    graph = load_graph(ROOT / "examples" / "read_then_save.json")
    with pytest.raises(InvariantViolation) as e:
        compile_graph(graph, schedule=schedule)
    assert e.value.invariant == "SCH-1" and needle in str(e.value)


def test_run_compiled_binds_inputs() -> None:
    graph = load_graph(ROOT / "examples" / "read_then_save.json")
    compiled = compile_graph(graph)
    a = np.arange(4, dtype=np.float32)
    got, want = run_compiled(compiled, {"A": a}, runs=2), run_reference(graph, {"A": a}, runs=2)
    assert all(same_bits(got[k], want[k]) for k in want)
    with pytest.raises(MalformedInput):
        run_compiled(compiled, {"A": a[:3]})


def test_int32_max_is_numpy_maximum_bit_for_bit_also_in_place():
    """max on int32 under every scheduler and both pipelines: at O2 the second max
    overwrites the first one's buffer in place (its in-place list allows it), the
    third writes straight into the placeholder it is saved into."""
    i32 = np.iinfo(np.int32)
    a = np.array([[i32.min, -1, 0], [5, i32.max, -7]], dtype=np.int32)
    b = np.array([i32.max, -2, -1], dtype=np.int32)
    c = np.array([[3], [i32.min]], dtype=np.int32)
    g = Graph(
        name="int32_max",
        storage=(
            Storage("a", StorageKind.PLACEHOLDER, Dtype.INT32, (2, 3)),
            Storage("b", StorageKind.CONSTANT, Dtype.INT32, (3,), init=Init(value=tuple(b.tolist()))),
            Storage("c", StorageKind.PLACEHOLDER, Dtype.INT32, (2, 1)),
        ),
        nodes=(
            Node("m1", OpKind.MAX, (Ref("a"), Ref("b"))),
            Node("m2", OpKind.MAX, (Ref("m1"), Ref("c"))),
            Node("m3", OpKind.MAX, (Ref("b"), Ref("m2"))),
            Node("s", OpKind.SAVE, (Ref("m3"),), attrs=(("target", "a"),)),
        ),
    )
    want = np.maximum(b, np.maximum(np.maximum(a, b), c))
    assert want.dtype == np.int32
    ref = run_reference(g, {"a": a, "c": c})
    assert same_bits(ref["a"], want)
    for pipeline in PIPELINES:
        for scheduler, seed in SCHEDULES:
            compiled = compile_graph(g, scheduler=scheduler, seed=seed, pipeline=pipeline)
            got = run_compiled(compiled, {"a": a, "c": c})
            assert got["a"].dtype == np.int32 and same_bits(got["a"], want), (pipeline, scheduler, seed)
    text = print_program(compile_graph(g, pipeline="O2").program)
    assert "m2 = max(@out %m1, @in %m1, @in c)" in text, text
