"""Every mutant of the catalog (DESIGN §9) is killed by a deterministic test.

Each case is a small graph with a schedule and a pipeline. ``detect`` runs the
oracles a user relies on: the verifier's verdict, compilation (IR verifier
after every pass, MEM-1 after allocation), execution under the sanitizer, and
the bit-exact differential against the reference over two runs. The same case
must pass with the correct compiler and be caught with the mutant, by the
oracle the case names.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from refcompiler.driver import compile_graph, run_compiled
from refcompiler.errors import InvariantViolation
from refcompiler.graph import Graph
from refcompiler.graph_json import graph_from_doc
from refcompiler.mutants import CATALOG, activate
from refcompiler.reference import run_reference
from refcompiler.values import same_bits
from refcompiler.verifier import violations


def P(name: str, shape: list[int], seed: int | None = None, kind: str = "placeholder", **extra: object) -> dict:
    doc: dict = {"name": name, "kind": kind, "dtype": "float32", "shape": shape, **extra}
    if seed is not None:
        doc["init"] = {"seed": seed}
    return doc


def N(name: str, op: str, *inputs: str, **attrs: object) -> dict:
    doc: dict = {"name": name, "op": op, "inputs": list(inputs)}
    if "state" in attrs:
        doc["state"] = attrs.pop("state")
    if attrs:
        doc["attrs"] = attrs
    return doc


def graph(name: str, storage: list[dict], nodes: list[dict]) -> Graph:
    return graph_from_doc({"format": "refc-graph/1", "name": name, "storage": storage, "nodes": nodes})


@dataclass(frozen=True)
class Case:
    graph: Graph
    caught_by: str  # "verifier:<id>", "ir:<id>" (compile-time IR verifier/MEM-1), "sanitizer:<id>" or "differential"
    pipeline: str = "O0"
    schedule: tuple[str, ...] | None = None


def detect(case: Case, mutant: str | None) -> str | None:
    """How the oracles catch the case under ``mutant`` (``None`` when it passes)."""
    g = case.graph
    expected_reject = case.caught_by.startswith("verifier:")
    with activate(mutant):
        ids = sorted({v.invariant for v in violations(g)})
    if expected_reject:
        want = case.caught_by.split(":", 1)[1]
        return None if ids == [want] else f"verifier:{want}"
    if ids:
        return f"verifier accepted nothing: {ids}"
    reference = run_reference(g, runs=2)  # the oracle never runs a mutant
    with activate(mutant):
        try:
            compiled = compile_graph(g, pipeline=case.pipeline, schedule=case.schedule)
        except InvariantViolation as v:
            return f"ir:{v.invariant}"
        try:
            result = run_compiled(compiled, runs=2)
        except InvariantViolation as v:
            return f"sanitizer:{v.invariant}"
    if any(not same_bits(result[k], reference[k]) for k in reference):
        return "differential"
    return None


READ_THEN_SAVE = graph(
    "read_then_save",
    [P("A", [4], 1), P("W", [4], 3, kind="constant"), P("out", [4])],
    [N("sum", "add", "A", "W"), N("s", "save", "sum", target="A"), N("late", "mul", "A", "A"),
     N("save_late", "save", "late", target="out")],
)

PROFILE = graph(
    "profile",
    [P("A", [6], 2), P("minmax", [2], 0, kind="owned", owner="prof"), P("hist", [4], kind="owned", owner="prof")],
    [N("x", "exp", "A"), N("prof", "quantization_profile", "x", state=["minmax", "hist"], lo=0.0, hi=3.0)],
)

ACCUMULATE = graph(
    "accumulate",
    [P("A", [3], 4), P("acc", [3], 5, kind="owned", owner="run"), P("out", [3])],
    [N("run", "accumulate", "A", state=["acc"]), N("save", "save", "run", target="out")],
)

CASES: dict[str, Case] = {
    # topo breaks ties by creation order: without the late -> s edge the save runs
    # first, and the IR verifier sees A written before its reader late
    "sched-drop-save-war": Case(READ_THEN_SAVE, "ir:IR-4"),
    "verify-allow-foreign-state": Case(
        graph(
            "foreign_read",
            [P("A", [2], 1), P("acc", [2], kind="owned", owner="run"), P("out", [2])],
            [N("run", "accumulate", "A", state=["acc"]), N("peek", "neg", "acc"), N("s", "save", "peek", target="out")],
        ),
        "verifier:OWN-2",
    ),
    "verify-allow-two-saves": Case(
        graph(
            "two_saves",
            [P("A", [2], 1), P("B", [2])],
            [N("x", "neg", "A"), N("s1", "save", "x", target="B"), N("s2", "save", "A", target="B")],
        ),
        "verifier:OWN-4",
    ),
    # y may overwrite x's buffer only if nothing reads x later; z does
    "share-ignore-later-reads": Case(
        graph(
            "later_read",
            [P("A", [4], 1), P("B", [4])],
            [N("x", "exp", "A"), N("y", "neg", "x"), N("z", "mul", "x", "y"), N("s", "save", "z", target="B")],
        ),
        "differential",
        pipeline="share_buffers",
    ),
    # the later reader of x reaches it through the view v
    "share-ignore-views": Case(
        graph(
            "view_read",
            [P("A", [4], 1), P("B", [4]), P("C", [2, 2])],
            [N("x", "exp", "A"), N("v", "reshape", "x", shape=[2, 2]), N("y", "neg", "x"), N("w", "relu", "v"),
             N("s1", "save", "y", target="B"), N("s2", "save", "w", target="C")],
        ),
        "differential",
        pipeline="share_buffers",
        schedule=("x", "v", "y", "w", "s1", "s2"),
    ),
    # neg(A) over A's own buffer changes a placeholder nobody saves
    "share-into-placeholder": Case(
        graph("into_placeholder", [P("A", [4], 1), P("B", [4])], [N("y", "neg", "A"), N("s", "save", "y", target="B")]),
        "ir:IR-4",
        pipeline="share_buffers",
    ),
    # add_sub's s may overwrite nothing: d still reads a and b (IR-6 sees the
    # in-place pair the spec does not declare)
    "share-any-input": Case(
        graph(
            "add_sub",
            [P("A", [4], 1), P("B", [4], 2), P("S", [4]), P("D", [4])],
            [N("a", "exp", "A"), N("b", "tanh", "B"), N("as", "add_sub", "a", "b"),
             N("s1", "save", "as:0", target="S"), N("s2", "save", "as:1", target="D")],
        ),
        "ir:IR-6",
        pipeline="share_buffers",
    ),
    "hoist-dealloc-early": Case(READ_THEN_SAVE, "ir:IR-1", pipeline="hoist_dealloc"),
    # x and y are both live at z; freeing x one instruction early lets z's buffer overlap it
    "alloc-early-free": Case(
        graph(
            "early_free",
            [P("A", [2, 2], 1), P("B", [2, 2], 2), P("C", [2, 2])],
            [N("x", "exp", "A"), N("y", "tanh", "B"), N("z", "matmul", "x", "y"), N("s", "save", "z", target="C")],
        ),
        "ir:MEM-1",
    ),
    # sum may write A directly only if nothing reads A after it; late does
    "copy-elim-ignore-readers": Case(
        READ_THEN_SAVE, "ir:IR-4", pipeline="eliminate_copies", schedule=("sum", "late", "s", "save_late")
    ),
    "dse-drop-state-write": Case(PROFILE, "differential", pipeline="dead_store_elimination"),
    # roll over its own input: a stencil committed in chunks reads what it already overwrote
    "inplace-stencil": Case(
        graph(
            "stencil",
            [P("A", [4, 2], 1), P("B", [4, 2])],
            [N("x", "exp", "A"), N("y", "roll", "x"), N("s", "save", "y", target="B")],
        ),
        "differential",
        pipeline="share_buffers",
    ),
    "dce-drop-stateful": Case(PROFILE, "differential"),
    "lower-state-no-writeback": Case(ACCUMULATE, "ir:IR-5"),
}


def test_every_mutant_has_a_kill_case() -> None:
    assert sorted(CASES) == sorted(CATALOG)


@pytest.mark.parametrize("name", list(CASES))
def test_case_passes_without_the_mutant(name: str) -> None:
    assert detect(CASES[name], None) is None


@pytest.mark.parametrize("name", list(CASES))
def test_mutant_is_killed(name: str) -> None:
    case = CASES[name]
    assert detect(case, name) == case.caught_by


def test_mutants_are_off_by_default() -> None:
    from refcompiler import deps

    assert ("late", "s", "A") in deps.memory_edges(READ_THEN_SAVE)
    with activate("sched-drop-save-war"):
        assert deps.memory_edges(READ_THEN_SAVE) == []
    assert ("late", "s", "A") in deps.memory_edges(READ_THEN_SAVE)


def test_activating_no_mutant_installs_nothing_and_nests():
    from refcompiler import variants
    from refcompiler.mutants import activate

    before = variants.active()
    with activate(None):
        with activate(None):
            assert variants.active() is before
        with activate("sched-drop-save-war"):
            assert variants.active() is not before and len(variants.active()) == len(before) + 1
            with activate(None):  # inside a mutant, None leaves the mutant installed
                assert len(variants.active()) == len(before) + 1
        assert variants.active() is before


def test_an_unknown_mutant_is_refused_before_its_block_runs():
    import pytest

    from refcompiler.errors import UsageError
    from refcompiler.mutants import activate

    ran = []
    with pytest.raises(UsageError, match="unknown mutant"):
        with activate("no-such-mutant"):
            ran.append(1)
    assert ran == []


def test_replaced_tells_whether_a_swap_point_is_replaced_in_the_current_context():
    from refcompiler.allocator import live_interval
    from refcompiler.variants import installed, replaced

    assert not replaced(live_interval)
    with installed({live_interval: lambda program, name: (0, 0)}):
        assert replaced(live_interval)
    assert not replaced(live_interval)
