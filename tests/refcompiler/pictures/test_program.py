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


def _fault_of(make):
    from refcompiler.errors import InvariantViolation

    with pytest.raises(InvariantViolation) as info:
        make()
    assert info.value.program is not None  # the compilation step keeps the faulty program
    return info.value


def test_a_fault_in_the_ir_is_drawn_red_at_its_instruction_with_a_note():
    from refcompiler.ir import Opcode

    program = compiled("sgd_momentum", "O0")
    dealloc = next(i for i, ins in enumerate(program.instrs) if ins.opcode is Opcode.DEALLOC)
    # the dealloc of %y moved before the kernel reading %y: IR-1 after the pass
    freed = program.instrs[dealloc]
    instrs = list(program.instrs)
    del instrs[dealloc]
    reader = next(i for i, ins in enumerate(instrs) if any(o.name == freed.name for o in ins.operands) and ins.opcode is Opcode.KERNEL
                  and ins.name != "y")
    instrs.insert(reader, freed)
    broken = program.with_instrs(instrs)
    from refcompiler.passes import run_pipeline

    fault = _fault_of(lambda: run_pipeline(broken, []))
    assert fault.invariant == "IR-1" and fault.instruction is not None and fault.program == broken
    pic = read(program_dot(fault.program, fault))
    marked = [v for v, a in pic.vertices.items() if a.get("penwidth") == "3"]
    assert marked == [f"instr:{fault.instruction}"]
    assert pic.edges_between("fault", f"instr:{fault.instruction}")
    assert "IR-1" in pic.vertices["fault"]["label"] and "after lowering" in pic.vertices["fault"]["label"]
    # without the fault: nothing red, no note
    plain = read(program_dot(fault.program))
    assert "fault" not in plain.vertices and not [v for v, a in plain.vertices.items() if a.get("penwidth") == "3"]


def test_a_fault_at_an_instruction_not_drawn_is_named_in_the_note():
    from refcompiler.errors import InvariantViolation

    program = compiled("read_then_save", "O0")
    at = next(i for i, ins in enumerate(program.instrs) if ins.opcode.value == "alloc")
    fault = InvariantViolation("IR-1", "made up", instruction=at, instruction_name=program.instrs[at].name)
    pic = read(program_dot(program, fault))
    assert f"instruction {at} (alloc {program.instrs[at].name}, not drawn)" in pic.vertices["fault"]["label"].replace("\n", " ")
    assert not [v for v, a in pic.vertices.items() if a.get("penwidth") == "3"]


def test_an_allocation_that_breaks_mem1_is_drawn_with_the_overlapping_boxes_red():
    from refcompiler.mutants import activate

    with activate("alloc-early-free"):
        fault = _fault_of(lambda: compiled("sgd_momentum", "O0"))
    assert fault.invariant == "MEM-1" and fault.program.offsets
    root = ET.fromstring(arena_svg(fault.program, fault))
    red = {r.find(f"{SVG}title").text.split(": offset")[0] for r in root.iter(f"{SVG}rect")
           if r.get("class") == "buffer" and r.get("stroke") == "#c62828"}
    assert red == set(fault.names) and len(red) == 2
    said = " ".join(t.text or "" for t in root.iter(f"{SVG}text") if t.get("fill") == "#c62828")
    assert "MEM-1" in said and "overlap while both are live" in said
