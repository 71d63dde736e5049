"""eliminate_copies: the producer writes the placeholder when no read of the
placeholder's entry value comes at or after it; otherwise the copy stays."""

from __future__ import annotations

from dataclasses import replace

from specs import OpKind

from refcompiler.ir import Opcode, Program
from refcompiler.passes.eliminate_copies import eliminate_copies, placeholder_read_after
from refcompiler.variants import installed
from tests.refcompiler.passes.ir_build import (
    verified,
    operands,
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

BUFFERS = [placeholder("A"), placeholder("B"), const("W"), owned("S", "acc")]


def eliminated(p: Program) -> Program:
    return verified(eliminate_copies, p)


def read_then_save(reader_first: bool) -> Program:
    """%y = neg(W); a reader of A before or after the producer; save %y -> A."""
    reader = [alloc("%r"), kernel("r", OpKind.RELU, ("%r",), ("A",))]
    producer = [alloc("%y"), kernel("y", OpKind.NEG, ("%y",), ("W",))]
    body = reader + producer if reader_first else producer + reader
    return program(
        BUFFERS,
        *body,
        copy("save_a", "A", "%y"),
        dealloc("%y"),
        copy("save_b", "B", "%r"),
        dealloc("%r"),
        saves=(save("save_a", "A", "y"), save("save_b", "B", "r")),
    )


def test_producer_writes_the_placeholder():
    out = eliminated(read_then_save(reader_first=True))
    assert operands(out, "y") == ["A", "W"]
    assert operands(out, "r") == ["B", "A"]  # B's copy went too
    assert opcodes_and_names(out) == [("kernel", "r"), ("kernel", "y")]


def test_not_when_the_placeholder_is_read_after_the_producer():
    p = read_then_save(reader_first=False)
    out = eliminated(p)
    assert operands(out, "y") == ["%y", "W"]
    assert operands(out, "save_a") == ["A", "%y"]
    # the mutant copy-elim-ignore-readers
    with installed({placeholder_read_after: lambda program, index, placeholder: False}):
        wrong = eliminate_copies(p)
    assert operands(wrong, "y") == ["A", "W"]
    # r, after y, now reads the saved value where it meant A's entry value:
    # statically legal (IR-4 cannot tell the two reads apart), wrong when run
    order = [i.name for i in wrong.instrs if i.opcode is Opcode.KERNEL]
    assert order == ["y", "r"] and operands(wrong, "r") == ["B", "A"]


def test_not_when_a_view_of_the_placeholder_is_read_after_the_producer():
    p = program(
        [placeholder("A"), placeholder("B", F22), const("W")],
        view("av", "A", F22),
        alloc("%y"),
        kernel("y", OpKind.NEG, ("%y",), ("W",)),
        alloc("%r", F22),
        kernel("r", OpKind.RELU, ("%r",), ("av",)),
        copy("save_a", "A", "%y"),
        dealloc("%y"),
        copy("save_b", "B", "%r"),
        dealloc("%r"),
        saves=(save("save_a", "A", "y"), save("save_b", "B", "r")),
    )
    out = eliminated(p)
    assert operands(out, "save_a") == ["A", "%y"]
    assert operands(out, "r") == ["B", "av"]


def test_not_when_the_producer_reads_the_placeholder():
    p = program(
        BUFFERS,
        alloc("%y"),
        kernel("y", OpKind.NEG, ("%y",), ("A",)),
        copy("save_a", "A", "%y"),
        dealloc("%y"),
        saves=(save("save_a", "A", "y"),),
    )
    assert eliminated(p) == p


def test_later_readers_of_the_value_read_the_placeholder():
    p = program(
        BUFFERS,
        alloc("%y"),
        kernel("y", OpKind.NEG, ("%y",), ("W",)),
        copy("save_a", "A", "%y"),
        alloc("%z"),
        kernel("z", OpKind.RELU, ("%z",), ("%y",)),
        dealloc("%y"),
        copy("save_b", "B", "%z"),
        dealloc("%z"),
        saves=(save("save_a", "A", "y"), save("save_b", "B", "z")),
    )
    out = eliminated(p)
    assert operands(out, "z") == ["B", "A"]
    assert opcodes_and_names(out) == [("kernel", "y"), ("kernel", "z")]


def test_not_through_a_view_source():
    p = program(
        [placeholder("A", F22), const("W")],
        alloc("%y"),
        kernel("y", OpKind.NEG, ("%y",), ("W",)),
        view("yv", "%y", F22),
        copy("save_a", "A", "yv"),
        dealloc("%y"),
        saves=(save("save_a", "A", "y"),),
    )
    assert eliminated(p) == p


def test_not_when_the_producer_is_in_place_on_another_buffer():
    # after sharing, %x holds relu's result in place: %x has two writers
    p = program(
        BUFFERS,
        alloc("%x"),
        kernel("x", OpKind.NEG, ("%x",), ("W",)),
        kernel("y", OpKind.RELU, ("%x",), ("%x",)),
        copy("save_a", "A", "%x"),
        dealloc("%x"),
        saves=(save("save_a", "A", "y"),),
    )
    assert eliminated(p) == p


def test_not_when_the_value_is_written_again_later():
    # %y is saved, then a later kernel takes %y over in place: A must keep the first value
    p = program(
        BUFFERS,
        alloc("%y"),
        kernel("y", OpKind.NEG, ("%y",), ("W",)),
        copy("save_a", "A", "%y"),
        kernel("z", OpKind.RELU, ("%y",), ("%y",)),
        copy("save_b", "B", "%y"),
        dealloc("%y"),
        saves=(save("save_a", "A", "y"), save("save_b", "B", "z")),
    )
    assert eliminated(p) == p


def test_not_for_an_unrecorded_copy_or_another_producer():
    p = read_then_save(reader_first=True)
    unrecorded = replace(p, saves=(save("save_b", "B", "r"),))  # save_a is not a recorded save
    assert operands(eliminate_copies(unrecorded), "save_a") == ["A", "%y"]
    other = replace(p, saves=(save("save_a", "A", "elsewhere"), save("save_b", "B", "r")))
    assert operands(eliminated(other), "save_a") == ["A", "%y"]


def test_owner_result_may_be_saved_directly():
    p = program(
        BUFFERS,
        alloc("%t"),
        kernel("acc", OpKind.ACCUMULATE, ("%t",), ("W",), ("S",)),
        copy("save_a", "A", "%t"),
        dealloc("%t"),
        saves=(save("save_a", "A", "acc"),),
    )
    assert operands(eliminated(p), "acc") == ["A", "W", "S"]
