"""The allocator: offsets from live intervals, reuse, peak bytes, MEM-1."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from specs import Dtype, OpKind, TensorType

from refcompiler.allocator import ALIGN, allocate, live_interval
from refcompiler.deps import dependency_graph
from refcompiler.driver import compile_graph
from refcompiler.errors import InvariantViolation
from refcompiler.graph import Graph, Node, Ref, Storage, StorageKind
from refcompiler.graph_json import load_graph
from refcompiler.ir import Opcode, Program
from refcompiler.ir_text import parse_program
from refcompiler.lowering import lower
from refcompiler.schedulers import SCHEDULERS
from refcompiler.variants import installed
from tests.refcompiler.local_graphs import graphs

ROOT = Path(__file__).resolve().parents[2]
F32 = Dtype.FLOAT32


def assert_well_placed(p: Program) -> None:
    """An independent MEM-1 check: activations whose alloc..dealloc ranges (and
    whose first..last uses) overlap in time never overlap in bytes."""
    allocs = [i.name for i in p.instrs if i.opcode is Opcode.ALLOC]
    assert [n for n, _ in p.offsets] == allocs  # every activation, in alloc order, nothing else
    types = {i.name: i.type for i in p.instrs if i.opcode is Opcode.ALLOC}
    start = {i.name: k for k, i in enumerate(p.instrs) if i.opcode is Opcode.ALLOC}
    end = {i.name: k for k, i in enumerate(p.instrs) if i.opcode is Opcode.DEALLOC}
    offsets = dict(p.offsets)
    for name in allocs:
        assert offsets[name] % ALIGN == 0 and offsets[name] >= 0
        assert offsets[name] + types[name].nbytes <= p.peak_bytes  # type: ignore[operator]
    assert p.peak_bytes == max((offsets[n] + -(-types[n].nbytes // ALIGN) * ALIGN for n in allocs), default=0)
    for i, a in enumerate(allocs):
        for b in allocs[i + 1 :]:
            live_together = start[a] <= end[b] and start[b] <= end[a]
            disjoint = offsets[a] + types[a].nbytes <= offsets[b] or offsets[b] + types[b].nbytes <= offsets[a]
            assert disjoint or not live_together, f"{a} and {b} overlap while both live"


def chain(n: int) -> Graph:
    nodes = [Node("n0", OpKind.RELU, (Ref("P"),))]
    nodes += [Node(f"n{k}", OpKind.NEG, (Ref(f"n{k - 1}"),)) for k in range(1, n)]
    nodes.append(Node("s", OpKind.SAVE, (Ref(f"n{n - 1}"),), attrs=(("target", "out"),)))
    storage = (Storage("P", StorageKind.PLACEHOLDER, F32, (16,)), Storage("out", StorageKind.PLACEHOLDER, F32, (16,)))
    return Graph("chain", storage, tuple(nodes))


def test_reuses_freed_space() -> None:
    p = compile_graph(chain(6)).program
    assert_well_placed(p)
    # each link is 64 bytes and only two are live at once
    assert p.peak_bytes == 128
    assert sorted({off for _, off in p.offsets}) == [0, 64]


PROGRAM = """\
program "views"
buffer P : placeholder float32[4]
   0: alloc   %a : float32[4]
   1: kernel  a = relu(@out %a, @in P)
   2: view    %v : float32[2, 2] (@in %a)
   3: alloc   %b : float32[2, 2]
   4: kernel  b = neg(@out %b, @in %v)
   5: dealloc %a
   6: alloc   %c : float32[2, 2]
   7: kernel  c = tanh(@out %c, @in %b)
   8: dealloc %b
   9: alloc   %unused : float32[8]
  10: dealloc %unused
  11: dealloc %c
"""


def test_live_interval_counts_uses_through_views() -> None:
    p = parse_program(PROGRAM)
    assert live_interval(p, "%a") == (1, 4)
    assert live_interval(p, "%b") == (4, 7)
    # %c's dealloc is not right after its last use: it is live up to the dealloc
    assert live_interval(p, "%c") == (7, 11)
    assert live_interval(p, "%unused") == (9, 10)  # never used: alloc to dealloc
    allocated = allocate(p)
    offsets = allocated.offset_of
    assert "%v" not in offsets  # a view takes no space
    assert offsets["%b"] != offsets["%a"]  # b is written while a is read through v
    assert offsets["%c"] == offsets["%a"]  # a is dead by then: its space is reused
    assert offsets["%unused"] == offsets["%b"] == 16  # b is dead, c (at 0) is not
    assert allocated.peak_bytes == 48
    assert_well_placed(allocated)


def test_allocs_and_deallocs_away_from_the_uses_widen_the_interval() -> None:
    # %b is allocated before %a is deallocated, in the gap between the last use
    # of %a and the first of %b: by alloc..dealloc they are live together
    p = parse_program(
        'program "gap"\nbuffer P : placeholder float32[4]\n'
        "0: alloc %a : float32[4]\n1: kernel a = relu(@out %a, @in P)\n2: kernel p = neg(@out %a, @in %a)\n"
        "3: alloc %b : float32[4]\n4: dealloc %a\n5: kernel b = neg(@out %b, @in P)\n6: dealloc %b\n"
    )
    assert live_interval(p, "%a") == (1, 4)
    assert live_interval(p, "%b") == (3, 5)
    allocated = allocate(p)
    assert allocated.offset_of["%a"] != allocated.offset_of["%b"]
    # in the usual order (deallocs first, then allocs) the space is reused
    usual = parse_program(
        'program "usual"\nbuffer P : placeholder float32[4]\n'
        "0: alloc %a : float32[4]\n1: kernel a = relu(@out %a, @in P)\n2: kernel p = neg(@out %a, @in %a)\n"
        "3: dealloc %a\n4: alloc %b : float32[4]\n5: kernel b = neg(@out %b, @in P)\n6: dealloc %b\n"
    )
    assert live_interval(usual, "%a") == (1, 2)
    assert live_interval(usual, "%b") == (5, 5)
    assert allocate(usual).offset_of == {"%a": 0, "%b": 0}


def test_allocate_keeps_everything_else() -> None:
    p = parse_program(PROGRAM)
    allocated = allocate(p)
    assert allocated.instrs == p.instrs and allocated.buffers == p.buffers and allocated.name == p.name


def test_no_activations_needs_no_arena() -> None:
    p = parse_program('program "empty"\nbuffer P : placeholder float32[4]\n')
    assert allocate(p).peak_bytes == 0


@pytest.mark.parametrize("path", sorted(ROOT.glob("examples/*.json")), ids=lambda p: p.name)
@pytest.mark.parametrize("pipeline", ["O0", "O2"])
def test_examples_are_well_placed(path: Path, pipeline: str) -> None:
    assert_well_placed(compile_graph(load_graph(path), pipeline=pipeline).program)


@given(graphs(), st.sampled_from(["O0", "O2"]), st.sampled_from(["topo", "memory", "random"]))
def test_random_programs_are_well_placed(graph: Graph, pipeline: str, scheduler: str) -> None:
    assert_well_placed(compile_graph(graph, pipeline=pipeline, scheduler=scheduler).program)


def ends_early(program: Program, name: str) -> tuple[int, int]:
    first, last = live_interval.original(program, name)  # type: ignore[attr-defined]
    return first, last - 1


def test_an_interval_that_ends_early_is_caught_by_mem1() -> None:
    graph = load_graph(ROOT / "examples" / "sgd_momentum.json")
    p = lower(graph, SCHEDULERS["topo"](graph, dependency_graph(graph), 0))
    allocate(p)  # the real intervals are fine
    with installed({live_interval: ends_early}), pytest.raises(InvariantViolation) as e:
        allocate(p)
    assert e.value.invariant == "MEM-1"


def test_sizes_are_aligned() -> None:
    p = parse_program(
        'program "odd"\nbuffer P : placeholder float32[3]\n'
        "0: alloc %a : float32[3]\n1: kernel a = relu(@out %a, @in P)\n"
        "2: alloc %b : float32[3]\n3: kernel b = neg(@out %b, @in %a)\n4: dealloc %a\n5: dealloc %b\n"
    )
    allocated = allocate(p)
    assert allocated.offset_of == {"%a": 0, "%b": 16}
    assert allocated.peak_bytes == 32
    assert TensorType((3,), F32).nbytes == 12


def test_arena_first_fit_is_first_fit_over_the_live_blocks() -> None:
    import random

    from refcompiler.allocator import _Arena

    rng = random.Random(3)
    arena, blocks = _Arena(), []
    for _ in range(2000):
        if blocks and rng.random() < 0.45:
            lo, hi = blocks.pop(rng.randrange(len(blocks)))
            arena.release(lo, hi)
            continue
        size = rng.choice((16, 32, 64))
        offset = 0
        for lo, hi in sorted(blocks):  # the definition: lowest offset clear of every block
            if offset + size <= lo:
                break
            offset = max(offset, hi)
        assert arena.first_fit(size) == offset
        arena.take(offset, offset + size)
        blocks.append((offset, offset + size))


def test_a_program_holding_the_objects_of_one_allocated_gets_its_offsets_in_its_own_order(monkeypatch):
    # Placing and MEM-1 read no schedule: another order that compiled alike (the
    # same instruction objects) is given the offsets found, with its own schedule.
    import refcompiler.allocator as allocator

    placed: list[Program] = []
    real = allocator._allocate
    monkeypatch.setattr(allocator, "_allocate", lambda p: placed.append(p) or real(p))
    first = compile_graph(load_graph(ROOT / "examples" / "sgd_momentum.json"), pipeline="O0").program
    lowered = Program(first.name, first.buffers, first.instrs, schedule=first.schedule, saves=first.saves)
    again = Program(first.name, first.buffers, first.instrs, schedule=("another",), passes=("x",), saves=first.saves)
    a, b = allocate(lowered), allocate(again)
    assert len(placed) == 1 and a.offsets == b.offsets == first.offsets and a.peak_bytes == b.peak_bytes
    assert (b.schedule, b.passes) == (("another",), ("x",)) and b.instrs is first.instrs
