"""sink_alloc: each alloc right before the first use of its activation (a view's
definition counts); an unused one right before its dealloc."""

from __future__ import annotations

from specs import OpKind

from refcompiler.ir_verifier import verify_program
from refcompiler.passes.sink_alloc import sink_alloc
from tests.refcompiler.passes.ir_build import (
    F22,
    alloc,
    copy,
    dealloc,
    kernel,
    opcodes_and_names,
    placeholder,
    program,
    save,
    view,
)


def early_allocs():
    return program(
        [placeholder("A"), placeholder("B"), placeholder("C", F22)],
        alloc("%a"),
        alloc("%b"),
        alloc("%w"),
        alloc("%c", F22),
        alloc("%unused"),
        kernel("a", OpKind.NEG, ("%a",), ("A",)),
        kernel("b", OpKind.RELU, ("%b",), ("%a",)),
        view("vw", "%w", F22),  # %w's first use is the view's definition
        kernel("w", OpKind.NEG, ("vw",), ("C",)),
        kernel("c", OpKind.EXP, ("%c",), ("vw",)),
        dealloc("%a"),
        dealloc("%w"),
        dealloc("%unused"),
        copy("sb", "B", "%b"),
        dealloc("%b"),
        copy("sc", "C", "%c"),
        dealloc("%c"),
        saves=(save("sb", "B", "b"), save("sc", "C", "c")),
    )


def test_allocs_move_to_the_first_use():
    p = early_allocs()
    verify_program(p)
    out = sink_alloc(p)
    verify_program(out)
    assert opcodes_and_names(out) == [
        ("alloc", "%a"),
        ("kernel", "a"),
        ("alloc", "%b"),
        ("kernel", "b"),
        ("alloc", "%w"),
        ("view", "vw"),
        ("kernel", "w"),
        ("alloc", "%c"),
        ("kernel", "c"),
        ("dealloc", "%a"),
        ("dealloc", "%w"),
        ("alloc", "%unused"),
        ("dealloc", "%unused"),
        ("copy", "sb"),
        ("dealloc", "%b"),
        ("copy", "sc"),
        ("dealloc", "%c"),
    ]
    assert sink_alloc(out) == out
