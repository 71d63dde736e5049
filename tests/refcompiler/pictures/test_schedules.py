"""Counterexample and case pictures: the schedules side by side, the conflicting
pair and the missing ordering marked, the orderings a case's schedule breaks."""

from __future__ import annotations

from pathlib import Path

from refcompiler.graph_json import load_graph
from refcompiler.pictures import case_dot, counterexample_dot
from refcompiler.pictures.graph import ERROR
from refcompiler.pictures.schedules import backward_edges
from refcompiler.proofs import prove
from tests.refcompiler.pictures.dot_reader import read

ROOT = Path(__file__).resolve().parents[3]


def test_a_counterexample_shows_both_schedules_the_pair_and_the_missing_ordering():
    graph = load_graph(ROOT / "tests/data/prove/foreign_state.json")
    cex = prove(graph).counterexample
    pic = read(counterexample_dot(graph, cex, explanation="why"))
    a, b = cex.nodes
    for column, order in enumerate(cex.schedules, 1):
        steps = sorted(pic.clusters[f"cluster_schedule{column}"])
        labels = [pic.vertices[f"schedule{column}:{k}"]["label"].split("\n")[0] for k in range(len(order))]
        assert labels == [f"{k + 1}. {n}" for k, n in enumerate(order)] and len(steps) == len(order)
        red = {order[k] for k in range(len(order)) if pic.vertices[f"schedule{column}:{k}"].get("color") == ERROR}
        assert red == {a, b}
        first, second = (a, b) if column == 1 else (b, a)
        between = pic.edges_between(f"schedule{column}:{order.index(first)}", f"schedule{column}:{order.index(second)}")
        (arrow,) = [e for e in between if e["color"] == ERROR]
        assert f"{first} first" in arrow["label"]
    (missing,) = pic.edges_between(f"graph/node:{a}", f"graph/node:{b}")
    assert "missing ordering" in missing["label"] and missing["dir"] == "none"
    assert ("same", ["schedule1:0", "schedule2:0"]) in pic.ranks


def test_backward_edges_are_the_dependencies_a_schedule_breaks():
    legal = load_graph(ROOT / "examples/read_then_save.json")
    assert backward_edges(legal, ["sum", "late", "s", "save_late"]) == {}
    broken = backward_edges(legal, ["s", "sum", "late", "save_late"])
    assert set(broken) == {("sum", "s"), ("late", "s")} and "late then reads A after it is overwritten" in broken[("late", "s")]


def test_memory_edges_in_a_cycle_of_saves_are_broken_by_no_order():
    # save6 reads p5, which save7 writes, and the other way round: the compiler gives a save a private
    # copy (break_save_cycles), so either order is legal and neither may be drawn as the fault
    cyclic = load_graph(ROOT / "corpus/mutant.sched-drop-save-war.json")
    assert backward_edges(cyclic, ["save7", "save6"]) == {} == backward_edges(cyclic, ["save6", "save7"])
    text = case_dot(cyclic, ["save7", "save6"], title="case")
    assert "the memory edges form a cycle" in text and "breaks no dependency" in text and "runs too early" not in text


def test_a_case_picture_marks_the_broken_ordering_on_the_graph_and_the_schedule():
    graph = load_graph(ROOT / "examples/read_then_save.json")
    pic = read(case_dot(graph, ["s", "sum", "late", "save_late"], title="case", notes=["found by x"]))
    (edge,) = [e for e in pic.edges_between("graph/node:late", "graph/node:s") if e.get("color") == ERROR]
    assert "the schedule runs s first" in edge["label"]
    assert pic.vertices["schedule1:0"]["color"] == ERROR and pic.vertices["schedule1:1"]["color"] != ERROR
    assert pic.edges_between("schedule1:0", "schedule1:1")


def test_an_order_missing_a_node_the_compiler_schedules_says_so_and_names_no_program():
    # a scheduler that dropped a node: no edge is broken, and no program is made (SCH-1)
    graph = load_graph(ROOT / "examples/read_then_save.json")
    text = case_dot(graph, ["sum", "s", "save_late"], title="case", program="")
    assert "the order misses late" in text and "breaks no dependency" not in text and "refc compile" not in text


def test_a_legal_case_schedule_says_the_failure_is_in_the_program():
    graph = load_graph(ROOT / "examples/read_then_save.json")
    text = case_dot(graph, ["sum", "late", "s", "save_late"], title="case")
    assert "breaks no dependency" in text and ERROR not in "".join(v.get("color", "") for v in read(text).vertices.values() if "schedule" in v.get("label", ""))
