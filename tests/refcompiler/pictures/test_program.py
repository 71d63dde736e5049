"""The IR picture and the arena timeline of compiled programs."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import networkx as nx
import pytest

from refcompiler.driver import compile_graph
from refcompiler.graph_json import load_graph
from refcompiler.ir_analysis import activations, live_ranges, name_types
from refcompiler.pictures import arena_svg, program_dot
from refcompiler.pictures.program import aligned_bytes, shared_buffers
from tests.refcompiler.pictures.dot_reader import read

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
SVG = "{http://www.w3.org/2000/svg}"


def compiled(name: str, pipeline: str):
    return compile_graph(load_graph(ROOT / "examples" / f"{name}.json"), pipeline=pipeline).program


def test_shared_buffers_are_the_activations_that_hold_several_values():
    assert shared_buffers(compiled("sgd_momentum", "O2")) == {"%y": ["y", "err", "sq"]}
    assert shared_buffers(compiled("sgd_momentum", "O0")) == {}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
@pytest.mark.parametrize("pipeline", ["O0", "O2"])
def test_the_ir_picture_is_acyclic_and_draws_every_data_instruction(path, pipeline):
    program = compile_graph(load_graph(path), pipeline=pipeline).program
    pic = read(program_dot(program))
    g = nx.DiGraph((s, d) for s, d, a in pic.edges if a.get("style") != "invis")
    assert nx.is_directed_acyclic_graph(g)
    data = [i for i, ins in enumerate(program.instrs) if ins.opcode.value in ("kernel", "copy")]
    assert sorted(int(v.split(":")[1]) for v in pic.vertices if v.startswith("instr:")) == data


def test_an_in_place_result_reads_one_value_of_its_buffer_and_writes_the_next():
    program = compiled("sgd_momentum", "O2")
    pic = read(program_dot(program))
    sub = next(i for i, ins in enumerate(program.instrs) if ins.name == "err")
    assert [a["label"] for a in pic.edges_between("value:%y#0", f"instr:{sub}")] == ["@in 1"]
    assert [a["label"] for a in pic.edges_between(f"instr:{sub}", "value:%y#1")] == ["@out 0"]
    assert "shared buffer: holds y, err, sq" in pic.vertices["value:%y#1"]["label"]
    copy = next(i for i, ins in enumerate(program.instrs) if ins.name == "save_loss")
    assert [a["label"] for a in pic.edges_between("value:%total#0", f"instr:{copy}")] == ["@in 1 via view %total1"]


@pytest.mark.parametrize("pipeline", ["O0", "O2"])
def test_the_arena_timeline_has_one_box_per_activation_where_the_allocator_put_it(pipeline):
    program = compiled("sgd_momentum", pipeline)
    root = ET.fromstring(arena_svg(program))
    boxes = {r.find(f"{SVG}title").text.split(": offset")[0]: r for r in root.iter(f"{SVG}rect") if r.get("class") == "buffer"}
    assert sorted(boxes) == sorted(activations(program))
    ranges, types = live_ranges(program), name_types(program)
    x0 = min(float(r.get("x")) for r in boxes.values())
    cell = min(float(r.get("width")) / (ranges[n][1] - ranges[n][0] + 1) for n, r in boxes.items())
    base = max(float(r.get("y")) + float(r.get("height")) for r in boxes.values())
    per_byte = min(float(r.get("height")) / aligned_bytes(types[n].nbytes) for n, r in boxes.items())
    for name, r in boxes.items():
        assert float(r.get("x")) == pytest.approx(x0 + ranges[name][0] * cell, abs=0.1)
        bottom = float(r.get("y")) + float(r.get("height"))
        assert (base - bottom) / per_byte == pytest.approx(program.offset_of[name], abs=0.5)
        assert (r.get("fill") == "url(#shared)") == (name in shared_buffers(program))
    assert f"peak {program.peak_bytes} B" in "".join(t.text or "" for t in root.iter(f"{SVG}text"))


def test_a_program_without_activations_draws_an_empty_arena():
    program = compiled("read_then_save", "O2")
    empty = program.with_instrs([i for i in program.instrs if i.opcode.value in ("copy",)])
    assert "the arena is empty" in arena_svg(empty)
