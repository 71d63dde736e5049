"""The one-scan analysis agrees with the plain definitions (each a scan of the
whole program), on lowered and optimised programs and on malformed IR."""

from __future__ import annotations

from dataclasses import replace

import pytest

from refcompiler import ir_analysis
from refcompiler.driver import compile_graph
from refcompiler.ir import Instr, Opcode, Operand, OperandKind, Program
from refcompiler.proofs.scale import large_graph
from tests.refcompiler.passes.ir_build import F4, alloc, dealloc, placeholder, view


def _plain_aliases(program: Program, name: str) -> set[str]:
    sources = {i.name: i.operands[0].name for i in program.instrs if i.opcode is Opcode.VIEW and i.operands}
    root = ir_analysis.follow_views(sources, name)
    return {name, root} | {v for v in sources if ir_analysis.follow_views(sources, v) == root}


def _plain(program: Program, name: str, pick) -> list[int]:
    wanted = _plain_aliases(program, name)
    return [i for i, instr in enumerate(program.instrs) if wanted.intersection(pick(instr))]


def _programs() -> list[Program]:
    out = []
    for n, seed in ((30, 0), (120, 1), (300, 2)):
        for pipeline in ("O0", "O2"):
            out.append(compile_graph(large_graph(n, seed=seed), pipeline=pipeline).program)
    return out


@pytest.mark.parametrize("program", _programs(), ids=lambda p: f"{len(p.instrs)}instrs")
def test_queries_agree_with_plain_scans(program: Program) -> None:
    names = set(program.buffer_by_name) | {o.name for i in program.instrs for o in i.operands}
    for name in sorted(names):
        assert ir_analysis.aliases(program, name) == _plain_aliases(program, name)
        assert ir_analysis.uses_of(program, name) == _plain(program, name, ir_analysis.used_names)
        assert ir_analysis.readers(program, name) == _plain(program, name, ir_analysis.read_names)
        assert ir_analysis.writers(program, name) == _plain(program, name, ir_analysis.written_names)
    allocs = [i.name for i in program.instrs if i.opcode is Opcode.ALLOC]
    assert ir_analysis.activations(program) == allocs
    for name in allocs:
        assert ir_analysis.alloc_index(program, name) == next(
            k for k, i in enumerate(program.instrs) if i.opcode is Opcode.ALLOC and i.name == name
        )


def test_malformed_ir_is_analysed_without_raising() -> None:
    # a view cycle, a use before definition, a name that is nothing
    program = Program(
        "bad",
        (placeholder("P"),),
        (
            view("%v", "%w", F4),
            view("%w", "%v", F4),
            Instr(Opcode.KERNEL, "k", (Operand(OperandKind.OUT, "%a"), Operand(OperandKind.IN, "%nothing"))),
            alloc("%a"),
            dealloc("%a"),
        ),
    )
    assert ir_analysis.origin(program, "%nothing") == "%nothing"
    assert ir_analysis.origin(program, "%v") in {"%v", "%w"}
    assert ir_analysis.writers(program, "%a") == [2]
    assert ir_analysis.first_use(program, "%a") == 2
    assert ir_analysis.live_ranges(program) == {"%a": (3, 4)}


def test_follow_views_stops_at_a_cycle_and_at_the_origin() -> None:
    assert ir_analysis.follow_views({"a": "b", "b": "c"}, "a") == "c"
    assert ir_analysis.follow_views({"a": "b", "b": "a"}, "a") == "b"
    assert ir_analysis.follow_views({}, "x") == "x"


def test_an_analysis_is_kept_per_program_object() -> None:
    program = _programs()[0]
    assert ir_analysis.analyze(program) is ir_analysis.analyze(program)
    other = program.with_instrs(program.instrs[:-1])
    assert ir_analysis.analyze(other) is not ir_analysis.analyze(program)
    assert ir_analysis.analyze(other).program is other


def test_an_analysis_kept_on_a_program_goes_with_the_same_code_only() -> None:
    import pickle

    program = _programs()[0]
    facts = ir_analysis.analyze(program)
    assert ir_analysis.analyze(program.with_passes(("x",))) is facts  # same instructions and buffers
    assert ir_analysis.analyze(program.with_allocation((), 0)) is facts
    changed = program.with_instrs(program.instrs[:-1])
    assert ir_analysis.analyze(changed) is not facts
    assert ir_analysis.analyze(changed).instrs == program.instrs[:-1]
    copy = pickle.loads(pickle.dumps(program))  # the analysis is not pickled with it
    assert copy == program and "_analysis" not in copy.__dict__
    assert ir_analysis.analyze(copy) is not facts and ir_analysis.analyze(copy).uses == facts.uses


def test_a_program_given_its_own_instructions_is_itself_unless_it_has_an_allocation_to_drop() -> None:
    allocated = _programs()[0]
    program = allocated.with_instrs(allocated.instrs)  # the allocation is dropped: a new program
    assert program is not allocated and program.offsets == () and program.peak_bytes is None
    assert program.with_instrs(list(program.instrs)) is program  # a pass that moved nothing
    assert program.with_instrs(program.instrs[1:] + program.instrs[:1]) is not program
    equal_copies = tuple(replace(i) for i in program.instrs)  # equal, but not its objects
    assert program.with_instrs(equal_copies) is not program and program.with_instrs(equal_copies) == program


def _facts(analysis: ir_analysis.Analysis) -> dict[str, object]:
    """Everything an analysis holds but the (weak) reference to its program."""
    return {k: v for k, v in vars(analysis).items() if k != "_program"}


def _malformed_with_deallocs() -> Program:
    # deallocs before, between and after uses, twice for one name, of a view and of nothing
    return Program(
        "deallocs",
        (placeholder("P"),),
        (
            alloc("%a", F4),
            dealloc("%v"),
            view("%v", "%a", F4),
            dealloc("%a"),
            Instr(Opcode.KERNEL, "k", (Operand(OperandKind.OUT, "%v"), Operand(OperandKind.IN, "P"))),
            dealloc("%a"),
            Instr(Opcode.COPY, "s", (Operand(OperandKind.OUT, "P"), Operand(OperandKind.IN, "%a"))),
            dealloc("%nothing"),
        ),
    )


def _moves(program: Program) -> list[Program]:
    """``program`` with its deallocs dropped, its allocs dropped, each moved to the
    end, and both reversed in place: the other instructions kept in order."""
    instrs = list(program.instrs)
    movable = (Opcode.ALLOC, Opcode.DEALLOC)
    out = []
    for opcode in movable:
        out.append([i for i in instrs if i.opcode is not opcode])
        out.append([i for i in instrs if i.opcode is not opcode] + [i for i in instrs if i.opcode is opcode])
    slots = [k for k, i in enumerate(instrs) if i.opcode in movable]
    flipped = list(instrs)
    for k, i in zip(slots, reversed([instrs[k] for k in slots])):
        flipped[k] = i
    out.append(flipped)
    return [program.with_instrs(x) for x in out]


@pytest.mark.parametrize("program", [*_programs(), _malformed_with_deallocs()], ids=lambda p: f"{len(p.instrs)}instrs")
def test_an_analysis_moved_is_the_analysis_of_the_program_with_allocs_and_deallocs_moved(program: Program) -> None:
    facts = ir_analysis.analyze(program)
    facts.run_end(0)  # a moved analysis makes its own runs: the opcodes change
    for other in _moves(program):
        moved = facts.moved(other)
        assert moved is not None and moved.program is other
        assert _facts(moved) == _facts(ir_analysis.Analysis(other))
    fresh = ir_analysis.Analysis(program)
    fresh.run_end(0)
    assert _facts(facts) == _facts(fresh)  # the input's is left as it was


def test_an_analysis_is_not_moved_to_a_program_with_other_data_instructions_or_views() -> None:
    program = _programs()[1]
    facts = ir_analysis.analyze(program)
    data = [k for k, i in enumerate(program.instrs) if ir_analysis.is_data(i)]
    views = [k for k, i in enumerate(program.instrs) if i.opcode is Opcode.VIEW]
    dropped = program.with_instrs(program.instrs[: data[0]] + program.instrs[data[0] + 1 :])
    assert facts.moved(dropped) is None
    first = program.instrs[data[0]]
    rebuilt = program.with_instrs(tuple(replace(i) if i is first else i for i in program.instrs))  # equal, not the same
    assert facts.moved(rebuilt) is None
    swapped = list(program.instrs)
    swapped[data[0]], swapped[data[1]] = swapped[data[1]], swapped[data[0]]
    assert facts.moved(program.with_instrs(swapped)) is None
    if views:
        assert facts.moved(program.with_instrs([i for i in program.instrs if i.opcode is not Opcode.VIEW])) is None


def test_an_analysis_given_to_a_program_is_its_analysis_unless_it_has_one() -> None:
    program = compile_graph(large_graph(30, seed=0)).program
    other = program.with_instrs(program.instrs[:-1])
    given = ir_analysis.Analysis(other)
    ir_analysis.give_analysis(other, given)
    assert ir_analysis.analyze(other) is given
    ir_analysis.give_analysis(other, ir_analysis.Analysis(other))
    assert ir_analysis.analyze(other) is given
