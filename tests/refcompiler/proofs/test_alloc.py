"""Allocation proofs: MEM-1 with Z3, and the optimal arena peak."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from specs import Dtype, TensorType

from refcompiler.driver import compile_graph
from refcompiler.errors import InvariantViolation, UsageError
from refcompiler.graph_json import load_graph
from refcompiler.ir import Instr, Opcode, Operand, OperandKind, Program
from refcompiler.proofs import Verdict
from refcompiler.proofs.alloc import activations, check_mem1, clique_bound, optimal_peak
from refcompiler.proofs.scale import large_graph

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))


def _program(spec: list[tuple[str, int, int, int]], offsets: dict[str, int] | None = None) -> Program:
    """Activations ``(name, float32 elements, alloc index, dealloc index)`` in a
    program of allocs, deallocs and padding views."""
    events: dict[int, Instr] = {}
    for name, size, start, end in spec:
        events[start] = Instr(Opcode.ALLOC, name, type=TensorType((size,), Dtype.FLOAT32))
        events[end] = Instr(Opcode.DEALLOC, name, (Operand(OperandKind.IN, name),))
    last = max(events)
    pad = Instr(Opcode.VIEW, "pad", (Operand(OperandKind.IN, "K"),), type=TensorType((1,), Dtype.FLOAT32))
    instrs = tuple(events.get(i, pad) for i in range(last + 1))
    return Program("p", (), instrs, offsets=tuple((offsets or {}).items()))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
@pytest.mark.parametrize("pipeline", ["O0", "O2"])
def test_the_allocator_satisfies_mem1_by_z3(path, pipeline):
    program = compile_graph(load_graph(path), pipeline=pipeline).program
    assert check_mem1(program) is Verdict.PROVED


@pytest.mark.parametrize("scheduler", ["topo", "memory", "random"])
def test_the_allocator_satisfies_mem1_on_a_larger_program(scheduler):
    program = compile_graph(large_graph(150, seed=2), scheduler=scheduler, pipeline="O2").program
    assert check_mem1(program) is Verdict.PROVED


def test_overlapping_live_buffers_break_mem1():
    # a (16 bytes) lives 0..2 at offset 0; b (16 bytes) lives 1..3 at offset 8: bytes 8..15 shared
    program = _program([("a", 4, 0, 2), ("b", 4, 1, 3)], offsets={"a": 0, "b": 8})
    with pytest.raises(InvariantViolation) as e:
        check_mem1(program)
    assert e.value.invariant == "MEM-1"
    assert set(e.value.names) == {"a", "b"}


def test_disjoint_lifetimes_may_share_bytes():
    program = _program([("a", 4, 0, 1), ("b", 4, 2, 3)], offsets={"a": 0, "b": 0})
    assert check_mem1(program) is Verdict.PROVED


def test_a_use_after_dealloc_extends_the_live_range():
    """'a' is used (through a view) after its dealloc: its bytes are still read, so
    reusing them for 'b' is an overlap even though the dealloc came first."""
    f32 = TensorType((4,), Dtype.FLOAT32)
    instrs = (
        Instr(Opcode.ALLOC, "a", type=f32),
        Instr(Opcode.DEALLOC, "a", (Operand(OperandKind.IN, "a"),)),
        Instr(Opcode.ALLOC, "b", type=f32),
        Instr(Opcode.VIEW, "va", (Operand(OperandKind.IN, "a"),), type=f32),
        Instr(Opcode.DEALLOC, "b", (Operand(OperandKind.IN, "b"),)),
    )
    program = Program("p", (), instrs, offsets=(("a", 0), ("b", 0)))
    assert [(x.name, x.start, x.end) for x in activations(program)] == [("a", 0, 3), ("b", 2, 4)]
    with pytest.raises(InvariantViolation):
        check_mem1(program)


def test_an_unallocated_program_is_a_usage_error():
    with pytest.raises(UsageError):
        check_mem1(_program([("a", 4, 0, 1)]))


def test_optimal_peak_reaches_the_clique_bound_here():
    """At instruction 4, a (32 B), c (32 B) and d (16 B) are live: 80 bytes, and
    a placement of that size exists."""
    program = _program([("a", 8, 0, 5), ("b", 4, 1, 2), ("c", 8, 3, 7), ("d", 4, 4, 6)])
    best = optimal_peak(program)
    assert best.verdict is Verdict.PROVED
    assert best.lower_bound == clique_bound(activations(program)) == 80
    assert best.peak == 80


def test_the_optimal_placement_passes_mem1():
    """The optimum comes with a placement: MEM-1 holds for it (checked by Z3
    again) and it fits in the peak."""
    program = compile_graph(load_graph(ROOT / "examples" / "sgd_momentum.json"), pipeline="O2").program
    best = optimal_peak(program)
    placed = replace(program, offsets=best.offsets, peak_bytes=best.peak)
    assert check_mem1(placed) is Verdict.PROVED
    assert max(off + x.size for (_, off), x in zip(best.offsets, activations(program), strict=True)) <= best.peak


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_allocator_is_never_better_than_optimal(path):
    program = compile_graph(load_graph(path), pipeline="O2").program
    best = optimal_peak(program)
    assert best.verdict is Verdict.PROVED
    assert best.lower_bound <= best.peak <= program.peak_bytes


def test_optimal_peak_of_sgd_momentum_is_below_first_fit():
    """A known gap: first fit under O2 needs 144 bytes, 128 suffice."""
    program = compile_graph(load_graph(ROOT / "examples" / "sgd_momentum.json"), pipeline="O2").program
    assert program.peak_bytes == 144
    assert optimal_peak(program).peak == 128
    # without the allocator's 16-byte alignment the arena could be smaller still
    assert optimal_peak(program, align=4).peak <= 128


def test_optimal_peak_past_its_timeout_is_inconclusive():
    program = compile_graph(large_graph(200), pipeline="O0").program
    result = optimal_peak(program, timeout=1e-9)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.peak is None
    assert check_mem1(program, timeout=1e-9) is Verdict.INCONCLUSIVE
