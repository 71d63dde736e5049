"""dead_store_elimination: instructions whose every write is to an activation
never read later go; writes to placeholders and owned state are never dead."""

from __future__ import annotations

from specs import OpKind

from refcompiler.ir import BufferKind, Program
from refcompiler.ir_verifier import verify_program
from refcompiler.passes.dead_store_elimination import dead_store_elimination, is_observable
from refcompiler.variants import installed
from tests.refcompiler.passes.ir_build import (
    verified,
    F2,
    F8,
    F22,
    alloc,
    const,
    copy,
    dealloc,
    kernel,
    opcodes_and_names,
    owned,
    placeholder,
    program,
    save,
    view,
)

BUFFERS = [placeholder("A"), placeholder("B"), const("W"), owned("M", "prof", F2), owned("H", "prof", F8)]


def dse(p: Program) -> Program:
    return verified(dead_store_elimination, p)


def data_names(p: Program) -> list[str]:
    return [name for opcode, name in opcodes_and_names(p) if opcode in ("kernel", "copy")]


def test_dead_chain_goes_in_one_sweep():
    p = program(
        BUFFERS,
        alloc("%a"),
        kernel("a", OpKind.NEG, ("%a",), ("A",)),
        alloc("%b"),
        kernel("b", OpKind.RELU, ("%b",), ("%a",)),  # only feeds the dead c
        alloc("%c"),
        kernel("c", OpKind.EXP, ("%c",), ("%b",)),  # never read
        dealloc("%b"),
        dealloc("%c"),
        copy("sb", "B", "%a"),
        dealloc("%a"),
        saves=(save("sb", "B", "a"),),
    )
    assert data_names(dse(p)) == ["a", "sb"]


def test_a_result_read_through_a_view_is_live():
    p = program(
        [*BUFFERS, placeholder("C", F22)],
        alloc("%a"),
        kernel("a", OpKind.NEG, ("%a",), ("A",)),
        view("v", "%a", F22),
        copy("sc", "C", "v"),
        dealloc("%a"),
        saves=(save("sc", "C", "a"),),
    )
    assert dse(p) == p


def test_one_live_result_keeps_the_instruction():
    p = program(
        BUFFERS,
        alloc("%s"),
        alloc("%d"),
        kernel("x", OpKind.ADD_SUB, ("%s", "%d"), ("A", "W")),
        dealloc("%s"),  # s is dead, d is saved
        copy("sb", "B", "%d"),
        dealloc("%d"),
        saves=(save("sb", "B", "x"),),
    )
    assert dse(p) == p


def owner_and_save() -> Program:
    return program(
        BUFFERS,
        kernel("prof", OpKind.QUANTIZATION_PROFILE, (), ("A",), ("M", "H")),  # writes owned state only
        alloc("%y"),
        kernel("y", OpKind.NEG, ("%y",), ("W",)),
        copy("sb", "B", "%y"),  # writes a placeholder nobody reads afterwards
        dealloc("%y"),
        saves=(save("sb", "B", "y"),),
    )


def test_placeholder_and_owned_writes_are_never_dead():
    p = owner_and_save()
    assert dse(p) == p


def test_is_observable_variant_is_consulted():
    # the mutant dse-drop-state-write: owned state treated as unobservable
    def wrong(program: Program, name: str) -> bool:
        buffer = program.buffer_by_name.get(name)
        return buffer is not None and buffer.kind is BufferKind.PLACEHOLDER

    with installed({is_observable: wrong}):
        out = dead_store_elimination(owner_and_save())
    verify_program(out)  # statically fine: only running it shows the lost profile
    assert data_names(out) == ["y", "sb"]


def test_unused_allocs_are_left_for_delete_dead_allocs():
    p = program(
        BUFFERS,
        alloc("%c"),
        kernel("c", OpKind.EXP, ("%c",), ("A",)),
        dealloc("%c"),
    )
    assert opcodes_and_names(dse(p)) == [("alloc", "%c"), ("dealloc", "%c")]
