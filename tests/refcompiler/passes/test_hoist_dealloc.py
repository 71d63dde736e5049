"""hoist_dealloc: each dealloc right after the last use of its activation, uses
through views included; the swap point last_use is what places it."""

from __future__ import annotations

from specs import OpKind

from refcompiler.ir_verifier import program_violations, verify_program
from refcompiler.passes.hoist_dealloc import hoist_dealloc, last_use
from refcompiler.variants import installed
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

BUFFERS = [placeholder("A"), placeholder("B"), placeholder("C", F22)]
SAVES = (save("sb", "B", "b"), save("sc", "C", "c"))


def late_deallocs():
    """Every dealloc at the very end."""
    return program(
        BUFFERS,
        alloc("%a"),  # 0
        kernel("a", OpKind.NEG, ("%a",), ("A",)),  # 1
        view("v", "%a", F22),  # 2
        alloc("%b"),  # 3
        kernel("b", OpKind.RELU, ("%b",), ("%a",)),  # 4
        copy("sb", "B", "%b"),  # 5
        alloc("%c", F22),  # 6
        kernel("c", OpKind.EXP, ("%c",), ("v",)),  # 7: last use of %a, through v
        copy("sc", "C", "%c"),  # 8
        alloc("%unused"),  # 9
        dealloc("%a"),
        dealloc("%b"),
        dealloc("%c"),
        dealloc("%unused"),
        saves=SAVES,
    )


def test_deallocs_move_to_the_last_use():
    p = late_deallocs()
    verify_program(p)
    out = hoist_dealloc(p)
    verify_program(out)
    assert opcodes_and_names(out) == [
        ("alloc", "%a"),
        ("kernel", "a"),
        ("view", "v"),
        ("alloc", "%b"),
        ("kernel", "b"),
        ("copy", "sb"),
        ("dealloc", "%b"),
        ("alloc", "%c"),
        ("kernel", "c"),
        ("dealloc", "%a"),  # after c, which reads %a through v
        ("copy", "sc"),
        ("dealloc", "%c"),
        ("alloc", "%unused"),
        ("dealloc", "%unused"),  # unused: right after its alloc
    ]


def test_already_tight_program_is_unchanged():
    out = hoist_dealloc(late_deallocs())
    assert hoist_dealloc(out) == out


def test_last_use_counts_views():
    p = late_deallocs()
    assert last_use(p, "%a") == 7
    assert last_use(p, "%unused") == 9


def test_last_use_variant_is_consulted():
    # the mutant hoist-dealloc-early: one instruction before the last use
    with installed({last_use: lambda program, name: last_use.original(program, name) - 1}):
        wrong = hoist_dealloc(late_deallocs())
    found = program_violations(wrong)
    assert found and {v.invariant for v in found} == {"IR-1"}
    assert "after its dealloc" in str(found[0])


def test_a_program_left_as_it_is_is_found_without_the_rewrite():
    # with ``last_use`` as written, a program whose deallocs already sit where the
    # pass puts them is returned as it is, without rewriting it: the same verdict
    # as the rewrite's (forced here by installing ``last_use`` itself), for every
    # placement of each dealloc
    tight = hoist_dealloc(late_deallocs())
    deallocs = [k for k, i in enumerate(tight.instrs) if i.opcode.value == "dealloc"]
    for k in deallocs:
        for to in range(len(tight.instrs)):
            instrs = list(tight.instrs)
            instrs.insert(to, instrs.pop(k))
            moved = tight.with_instrs(instrs)
            fast = hoist_dealloc(moved)
            with installed({last_use: last_use.original}):
                rewritten = hoist_dealloc(moved)
            assert (fast is moved) == (rewritten is moved)
            assert [id(i) for i in fast.instrs] == [id(i) for i in rewritten.instrs]
    assert hoist_dealloc(tight) is tight
