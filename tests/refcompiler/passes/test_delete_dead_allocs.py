"""delete_dead_allocs: allocs, deallocs and views that no kernel or copy needs go."""

from __future__ import annotations

from specs import OpKind

from refcompiler.ir_verifier import verify_program
from refcompiler.passes.delete_dead_allocs import delete_dead_allocs
from tests.refcompiler.passes.ir_build import (
    F4,
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


def test_unused_pairs_and_views_go_used_ones_stay():
    p = program(
        [placeholder("A"), placeholder("B")],
        alloc("%dead"),
        view("dv", "%dead", F22),  # a view of a dead activation
        alloc("%a"),
        view("unused_view", "A", F22),  # a view of a module buffer nobody reads
        view("v1", "%a", F22),
        view("v2", "v1", F4),  # a chain: only v2 is named by a kernel
        kernel("a", OpKind.NEG, ("v2",), ("A",)),
        dealloc("%dead"),
        copy("sb", "B", "%a"),
        dealloc("%a"),
        saves=(save("sb", "B", "a"),),
    )
    verify_program(p)
    out = delete_dead_allocs(p)
    verify_program(out)
    assert opcodes_and_names(out) == [
        ("alloc", "%a"),
        ("view", "v1"),
        ("view", "v2"),
        ("kernel", "a"),
        ("copy", "sb"),
        ("dealloc", "%a"),
    ]
    assert delete_dead_allocs(out) == out
