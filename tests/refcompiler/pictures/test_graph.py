"""The graph picture: entry and exit values, memory edges, operand order, types,
in-place lists, state, violations and the legend."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from specs import Dtype, OpKind

from refcompiler.graph import Graph, Node, Ref, Storage, StorageKind
from refcompiler.graph_json import load_graph
from refcompiler.pictures import graph_dot
from refcompiler.pictures.graph import ERROR
from tests.refcompiler.pictures.dot_reader import read

ROOT = Path(__file__).resolve().parents[3]


def picture(name: str):
    return read(graph_dot(load_graph(ROOT / name)))


def test_a_saved_placeholder_is_two_values_and_reads_see_the_entry_one():
    pic = picture("examples/read_then_save.json")
    assert {"entry:A", "exit:A", "entry:out", "exit:out", "entry:W"} <= set(pic.vertices)
    assert "exit:W" not in pic.vertices  # a constant never changes
    # both operands of late = mul(A, A), in operand order, come from A's entry value
    assert sorted(a["label"] for a in pic.edges_between("entry:A", "node:late")) == ["in 0", "in 1"]
    assert [a["label"] for a in pic.edges_between("node:s", "exit:A")] == ["writes"]
    assert not pic.edges_between("node:s", "entry:A")
    # entry values on the first rank, exit values on the last
    assert ("min", ["entry:A", "entry:W", "entry:out"]) in pic.ranks
    assert ("max", ["exit:A", "exit:out"]) in pic.ranks  # in storage order, as the entry ones


def test_memory_edges_run_from_each_reader_to_the_save_labelled_with_the_placeholder():
    pic = picture("examples/read_then_save.json")
    (late,) = pic.edges_between("node:late", "node:s")
    assert late["style"] == "dotted" and "reads A at entry" in late["label"]
    # sum -> s is a data edge already: no second, memory edge on top of it
    assert [a["label"] for a in pic.edges_between("node:sum", "node:s")] == ["in 0"]


def test_result_types_and_in_place_lists_per_result():
    pic = picture("examples/sgd_momentum.json")
    step = pic.vertices["node:step"]["label"]
    assert ":0 w_new: float32[3, 2], may overwrite in 0 (w)" in step
    assert ":1 v_new: float32[3, 2], may overwrite in 2 (v)" in step
    assert "y: float32[3, 4], may overwrite no input" in pic.vertices["node:xt"]["label"]  # a transpose is never in place
    assert [a["label"] for a in pic.edges_between("node:step", "node:save_v")] == ["in 0 (:1)"]


def test_a_result_may_overwrite_only_an_input_of_its_own_type():
    # the spec lets add's y overwrite a or b; share_buffers takes only one of y's
    # shape, and the picture listed a [1] and a [] input of a [3] result too
    f32 = Dtype.FLOAT32
    graph = Graph(
        name="broadcast",
        storage=(Storage("v", StorageKind.PLACEHOLDER, f32, (3,)), Storage("one", StorageKind.PLACEHOLDER, f32, (1,))),
        nodes=(
            Node("s", OpKind.REDUCE_SUM, (Ref("v"),)),
            Node("b", OpKind.ADD, (Ref("s"), Ref("v"))),
            Node("c", OpKind.MUL, (Ref("b"), Ref("one"))),
            Node("d", OpKind.SUB, (Ref("v"), Ref("v"))),
            Node("e", OpKind.ADD, (Ref("one"), Ref("s"))),
        ),
    )
    pic = read(graph_dot(graph))
    assert "y: float32[3], may overwrite in 1 (b)" in pic.vertices["node:b"]["label"]
    assert "y: float32[3], may overwrite in 0 (a)" in pic.vertices["node:c"]["label"]
    assert "y: float32[3], may overwrite in 0 (a), in 1 (b)" in pic.vertices["node:d"]["label"]
    assert "y: float32[1], may overwrite in 0 (a)" in pic.vertices["node:e"]["label"]


def test_owned_state_enters_and_leaves_its_owner_in_operand_order():
    pic = picture("examples/quantization_profile.json")
    assert [a["label"] for a in pic.edges_between("entry:minmax", "node:prof")] == ["state 0 (inout)"]
    assert [a["label"] for a in pic.edges_between("entry:hist", "node:prof")] == ["state 1 (inout)"]
    assert [a["label"] for a in pic.edges_between("node:prof", "exit:hist")] == ["updated"]
    assert pic.vertices["node:prof"]["color"] == "#e65100"


def test_violations_are_notes_tied_to_the_vertices_they_name():
    pic = read(graph_dot(load_graph(ROOT / "tests/data/prove/foreign_state.json")))
    notes = {k: v for k, v in pic.vertices.items() if k.startswith("violation:")}
    assert len(notes) == 1 and next(iter(notes.values()))["label"].startswith("OWN-2: node 'peek' reads owned")
    (note,) = notes
    assert {d for s, d, _ in pic.edges if s == note} == {"node:peek", "entry:table"}
    assert pic.vertices["node:peek"]["color"] == ERROR
    assert pic.vertices["node:emb"]["color"] != ERROR
    valid = picture("examples/quantization_profile.json")
    assert not any(k.startswith("violation:") for k in valid.vertices)


def test_the_legend_explains_every_mark():
    legend = picture("examples/read_then_save.json").vertices["legend"]["label"]
    for words in ("constant", "placeholder at entry", "owned variable", "save", "data: fills operand", "memory edge", "violated"):
        assert words in legend


def test_names_that_need_quoting_and_a_cyclic_graph():
    s = Storage("s", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (3,))
    g = Graph(name='say "hi" \\ there', storage=(s,), nodes=(Node("n", OpKind.NEG, (Ref("s"),)),))
    assert graph_dot(g).splitlines()[0] == 'digraph "say \\"hi\\" \\\\ there" {'
    cyclic = Graph(name="c", storage=(s,), nodes=(Node("p", OpKind.ADD, (Ref("s"), Ref("q"))), Node("q", OpKind.NEG, (Ref("p"),))))
    pic = read(graph_dot(cyclic))
    assert pic.edges_between("node:q", "node:p") and pic.edges_between("node:p", "node:q")
    assert any(v["label"].startswith("G-1: the data graph has a cycle") for k, v in pic.vertices.items() if k.startswith("violation:"))


def test_the_text_is_the_same_in_every_process():
    # string hashing differs between processes: nothing may follow a set's order
    run = "from refcompiler.graph_json import load_graph; from refcompiler.pictures import graph_dot; import sys; print(graph_dot(load_graph(sys.argv[1])))"
    texts = {
        subprocess.run([sys.executable, "-c", run, str(ROOT / "examples/sgd_momentum.json")], capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": str(seed)}, cwd=ROOT).stdout
        for seed in range(6)
    }
    assert len(texts) == 1
