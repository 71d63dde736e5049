"""The IR verifier: a clean program passes, and each program built to break one
invariant (IR-1..IR-6, MEM-1) is rejected with that id and no other."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specs import OpKind

from refcompiler.errors import InvariantViolation
from refcompiler.ir import Instr, Opcode, Operand, OperandKind, Program
from refcompiler.ir_verifier import check_mem1, program_violations, verify_program
from tests.refcompiler.passes.ir_build import (
    F2,
    F4,
    F8,
    F22,
    alloc,
    const,
    copy,
    dealloc,
    kernel,
    owned,
    placeholder,
    program,
    save,
    view,
)

BUFFERS = [placeholder("A"), placeholder("B"), const("W"), owned("S", "acc"), owned("T", "acc")]
SAVES = (save("save", "A", "acc"),)


def clean() -> Program:
    """Views, an in-place kernel, owned state, a placeholder read then saved."""
    return program(
        BUFFERS,
        alloc("%s"),  # 0
        kernel("s", OpKind.ADD, ("%s",), ("A", "W")),  # 1
        view("v", "%s", F22),  # 2
        alloc("%r", F22),  # 3
        kernel("r", OpKind.RELU, ("%r",), ("v",)),  # 4
        dealloc("%s"),  # 5
        kernel("r2", OpKind.NEG, ("%r",), ("%r",)),  # 6: in place, allowed
        alloc("%t"),  # 7
        view("w", "%r", F4),  # 8
        kernel("acc", OpKind.ACCUMULATE, ("%t",), ("w",), ("S",)),  # 9
        dealloc("%r"),  # 10
        copy("save", "A", "%t"),  # 11
        dealloc("%t"),  # 12
        saves=SAVES,
    )


def edit(p: Program, index: int, *new: Instr) -> Program:
    """``p`` with instruction ``index`` replaced by ``new`` (none: deleted)."""
    instrs = list(p.instrs)
    instrs[index : index + 1] = new
    return p.with_instrs(instrs)


def insert(p: Program, index: int, *new: Instr) -> Program:
    instrs = list(p.instrs)
    instrs[index:index] = new
    return p.with_instrs(instrs)


def ids(p: Program) -> list[str]:
    return [v.invariant for v in program_violations(p)]


def assert_only(p: Program, invariant: str) -> None:
    found = ids(p)
    assert found, f"expected {invariant}, the program passed"
    assert set(found) == {invariant}, found
    with pytest.raises(InvariantViolation) as info:
        verify_program(p)
    assert info.value.invariant == invariant


def test_clean_program_passes():
    assert program_violations(clean()) == []
    verify_program(clean())


def test_empty_program_passes():
    verify_program(program([]))


# --- IR-1 -------------------------------------------------------------------

IR1_CASES = {
    "use after dealloc": lambda: insert(
        clean(), 6, alloc("%q"), kernel("x", OpKind.NEG, ("%q",), ("%s",)), dealloc("%q")
    ),
    "use of a view after its origin's dealloc": lambda: edit(
        clean(), 6, kernel("r2", OpKind.NEG, ("%r",), ("v",))
    ),
    "use before definition": lambda: edit(
        clean(), 1, kernel("s", OpKind.ADD, ("%s",), ("A", "%t"))
    ),
    "undefined name": lambda: edit(clean(), 1, kernel("s", OpKind.ADD, ("%s",), ("A", "nowhere"))),
    "allocated twice": lambda: insert(clean(), 1, alloc("%s")),
    "deallocated twice": lambda: insert(clean(), 6, dealloc("%s")),
    "never deallocated": lambda: edit(clean(), 12),
    "dealloc before alloc": lambda: insert(clean(), 0, dealloc("%t")),
    "dealloc of a module buffer": lambda: insert(clean(), 12, dealloc("A")),
    "dealloc of a view": lambda: insert(clean(), 9, dealloc("w")),
    "alloc shadows a module buffer": lambda: insert(clean(), 0, alloc("A"), dealloc("A")),
    "view defined twice": lambda: insert(clean(), 3, view("v", "%s", F22)),
    "view does not cover its source": lambda: edit(clean(), 2, view("v", "%s", F2)),
    "kernel missing an input": lambda: edit(clean(), 1, kernel("s", OpKind.ADD, ("%s",), ("A",))),
    "kernel operands out of order": lambda: edit(
        clean(),
        1,
        Instr(
            Opcode.KERNEL,
            "s",
            (Operand(OperandKind.IN, "A"), Operand(OperandKind.OUT, "%s"), Operand(OperandKind.IN, "W")),
            op=OpKind.ADD,
        ),
    ),
    "kernel without op": lambda: edit(clean(), 1, Instr(Opcode.KERNEL, "s", (Operand(OperandKind.OUT, "%s"),))),
    "copy of another type": lambda: insert(
        clean(), 12, alloc("%big", F8), copy("c", "%big", "%t"), dealloc("%big")
    ),
    "copy with operands swapped": lambda: edit(
        clean(), 11, Instr(Opcode.COPY, "save", (Operand(OperandKind.IN, "%t"), Operand(OperandKind.OUT, "A")))
    ),
    "view without source": lambda: edit(clean(), 2, Instr(Opcode.VIEW, "v", (), type=F22)),
    # the op's type rule (the one the graph verifier applies to nodes)
    "kernel result of another shape than its op makes": lambda: edit(clean(), 4, kernel("r", OpKind.RELU, ("%r",), ("%s",))),
    "kernel inputs its op cannot combine": lambda: insert(
        clean(), 4, alloc("%q"), kernel("q", OpKind.ADD, ("%q",), ("A", "v")), dealloc("%q")
    ),
    "kernel input of a dtype its op refuses": lambda: insert(
        clean(), 12, alloc("%e"), kernel("acc", OpKind.EMBEDDING_UPDATE, ("%e",), ("%t", "%t"), ("S",)), dealloc("%e")
    ),
    "kernel attribute its op's rule cannot read": lambda: edit(
        clean(), 1, replace(kernel("s", OpKind.ADD, ("%s",), ("A", "W")), op=OpKind.TRANSPOSE,
                            operands=(Operand(OperandKind.OUT, "%s"), Operand(OperandKind.IN, "A")), attrs=(("perm", "oops"),))
    ),
}


@pytest.mark.parametrize("case", sorted(IR1_CASES))
def test_ir1(case):
    assert_only(IR1_CASES[case](), "IR-1")


def test_ir1_typing_messages_name_the_types_and_the_rule():
    text = str(program_violations(IR1_CASES["kernel result of another shape than its op makes"]())[0])
    assert "relu of float32[4] gives float32[4], but its results are float32[2, 2]" in text
    text = str(program_violations(IR1_CASES["kernel inputs its op cannot combine"]())[0])
    assert "add of float32[4], float32[2, 2]: " in text and "broadcast" in text
    text = str(program_violations(IR1_CASES["kernel input of a dtype its op refuses"]())[0])
    assert "embedding_update input 0 is float32[4], its op needs int32" in text
    text = str(program_violations(IR1_CASES["kernel attribute its op's rule cannot read"]())[0])
    assert "transpose attribute 'perm' must be int list, got 'oops'" in text
    unknown = edit(clean(), 4, replace(kernel("r", OpKind.RELU, ("%r",), ("v",)), attrs=(("alpha", 0.1),)))
    assert ids(unknown) == ["IR-1"] and "relu has no attribute 'alpha'" in str(program_violations(unknown)[0])


def test_ir1_messages_say_why():
    text = str(program_violations(IR1_CASES["use of a view after its origin's dealloc"]())[0])
    assert "v (a view of %s) is used after its dealloc at instruction 5" in text
    text = str(program_violations(IR1_CASES["use before definition"]())[0])
    assert "used before its definition at instruction 7" in text


# --- IR-2 -------------------------------------------------------------------


def test_ir2_read_before_any_write():
    p = program(
        [placeholder("A")],
        alloc("%a"),
        alloc("%b"),
        kernel("b", OpKind.RELU, ("%b",), ("%a",)),
        dealloc("%a"),
        dealloc("%b"),
    )
    assert_only(p, "IR-2")


def test_ir2_read_through_a_view_of_unwritten_memory():
    p = program(
        [placeholder("A")],
        alloc("%a"),
        view("v", "%a", F22),
        alloc("%b", F22),
        kernel("b", OpKind.RELU, ("%b",), ("v",)),
        dealloc("%a"),
        dealloc("%b"),
    )
    assert_only(p, "IR-2")


def test_ir2_write_through_a_view_initialises_the_origin():
    p = program(
        [placeholder("A", F22)],
        alloc("%a"),
        view("v", "%a", F22),
        kernel("n", OpKind.NEG, ("v",), ("A",)),
        alloc("%b"),
        kernel("b", OpKind.RELU, ("%b",), ("%a",)),
        dealloc("%a"),
        dealloc("%b"),
    )
    verify_program(p)


def test_ir2_in_place_does_not_initialise_its_own_input():
    p = program([], alloc("%a"), kernel("n", OpKind.NEG, ("%a",), ("%a",)), dealloc("%a"))
    assert_only(p, "IR-2")


# --- IR-3 -------------------------------------------------------------------


def test_ir3_kernel_writes_a_constant():
    p = program([placeholder("A"), const("W")], kernel("n", OpKind.NEG, ("W",), ("A",)))
    assert_only(p, "IR-3")


def test_ir3_copy_into_a_view_of_a_constant():
    p = program([placeholder("A", F22), const("W")], view("cv", "W", F22), copy("c", "cv", "A"))
    assert_only(p, "IR-3")


# --- IR-4 -------------------------------------------------------------------


def test_ir4_read_after_the_save():
    assert_only(insert(clean(), 12, kernel("late", OpKind.NEG, ("%t",), ("A",))), "IR-4")


def test_ir4_read_through_a_view_after_the_save():
    p = insert(clean(), 0, view("av", "A", F22))
    p = insert(p, 13, alloc("%z", F22), kernel("late", OpKind.NEG, ("%z",), ("av",)), dealloc("%z"))
    assert [v.invariant for v in program_violations(p)] == ["IR-4"]
    assert "through av" in str(program_violations(p)[0])


def test_ir4_two_writers():
    p = insert(clean(), 12, copy("save", "A", "%t"))
    assert_only(p, "IR-4")


def test_ir4_written_by_something_other_than_its_save():
    p = edit(clean(), 11, copy("other", "A", "%t"))
    assert_only(p, "IR-4")


def test_ir4_unsaved_placeholder_is_never_written():
    p = insert(clean(), 12, copy("c", "B", "%t"))
    assert_only(p, "IR-4")
    assert "never saved" in str(program_violations(p)[0])


def test_ir4_producer_may_write_after_copy_elimination_but_not_read():
    # acc writes A directly (it is the save's recorded producer): fine
    eliminated = program(
        BUFFERS,
        alloc("%s"),
        kernel("s", OpKind.ADD, ("%s",), ("A", "W")),
        kernel("acc", OpKind.ACCUMULATE, ("A",), ("%s",), ("S",)),
        dealloc("%s"),
        # a consumer of the saved value reads it from A after copy elimination
        alloc("%n"),
        kernel("n", OpKind.NEG, ("%n",), ("A",)),
        copy("save_b", "B", "%n"),
        dealloc("%n"),
        saves=(*SAVES, save("save_b", "B", "n")),
    )
    verify_program(eliminated)
    # ... but not when it also reads A (the entry value is gone by then)
    p = program([placeholder("A")], kernel("n", OpKind.NEG, ("A",), ("A",)), saves=(save("save", "A", "n"),))
    assert_only(p, "IR-4")
    assert "read by the instruction that writes it" in str(program_violations(p)[0])


def test_ir4_a_save_of_a_placeholders_entry_value_reads_it_before_its_producer_writes_it():
    # save_b saves A's value at entry (no node produces it: ``Save.producer`` is None); once acc
    # has written A (copy elimination: it writes the save's target itself) that value is gone.
    # Allowed as any read of the saved value was, it showed only when the program ran (SEM-1).
    def ordered(*body):  # type: ignore[no-untyped-def]
        return program(BUFFERS, alloc("%s"), kernel("s", OpKind.ADD, ("%s",), ("A", "W")), *body, dealloc("%s"),
                       saves=(*SAVES, save("save_b", "B", None)))

    read_first = ordered(copy("save_b", "B", "A"), kernel("acc", OpKind.ACCUMULATE, ("A",), ("%s",), ("S",)))
    verify_program(read_first)
    late = ordered(kernel("acc", OpKind.ACCUMULATE, ("A",), ("%s",), ("S",)), copy("save_b", "B", "A"))
    assert_only(late, "IR-4")
    assert "placeholder A is read by save save_b, which saves its value at entry, after instruction 2 wrote it" in str(program_violations(late)[0])


# --- IR-5 -------------------------------------------------------------------


def test_ir5_non_owner_reads_owned_state():
    assert_only(insert(clean(), 12, alloc("%q"), kernel("q", OpKind.NEG, ("%q",), ("S",)), dealloc("%q")), "IR-5")


def test_ir5_copy_of_owned_state():
    assert_only(insert(clean(), 12, alloc("%q"), copy("q", "%q", "S"), dealloc("%q")), "IR-5")


def test_ir5_owner_uses_state_as_input():
    p = edit(clean(), 9, kernel("acc", OpKind.ACCUMULATE, ("%t",), ("T",), ("S",)))
    p = insert(p, 9, kernel("keep_w", OpKind.NEG, ("w",), ("w",)))  # keep w used, nothing else changes
    assert_only(p, "IR-5")


def test_ir5_other_kernel_updates_owned_state():
    p = insert(clean(), 12, alloc("%q"), kernel("other", OpKind.ACCUMULATE, ("%q",), ("%t",), ("S",)), dealloc("%q"))
    assert_only(p, "IR-5")


def test_ir5_view_of_owned_state():
    assert_only(insert(clean(), 12, view("sv", "S", F22)), "IR-5")


# --- IR-6 -------------------------------------------------------------------


def _two_inputs(*body: Instr) -> Program:
    """%a and %b written from A and B, then ``body``, then both deallocated."""
    return program(
        [placeholder("A"), placeholder("B")],
        alloc("%a"),
        kernel("a", OpKind.NEG, ("%a",), ("A",)),
        alloc("%b"),
        kernel("b", OpKind.NEG, ("%b",), ("B",)),
        *body,
        dealloc("%a"),
        dealloc("%b"),
    )


def test_ir6_clean_in_place_pairs():
    verify_program(_two_inputs(kernel("x", OpKind.ADD, ("%a",), ("%a", "%b"))))
    verify_program(_two_inputs(kernel("x", OpKind.ADD, ("%a",), ("%a", "%a"))))
    verify_program(_two_inputs(alloc("%s"), kernel("x", OpKind.ADD_SUB, ("%s", "%a"), ("%a", "%b")), dealloc("%s")))
    verify_program(
        _two_inputs(
            alloc("%g"),
            kernel("g", OpKind.NEG, ("%g",), ("A",)),
            kernel("x", OpKind.SGD_MOMENTUM, ("%a", "%b"), ("%a", "%g", "%b")),
            dealloc("%g"),
        )
    )


def test_ir6_result_not_allowed_to_overwrite_that_input():
    # add_sub: s may overwrite nothing (d still reads a and b)
    p = _two_inputs(alloc("%d"), kernel("x", OpKind.ADD_SUB, ("%a", "%d"), ("%a", "%b")), dealloc("%d"))
    assert_only(p, "IR-6")


def test_ir6_sgd_w_new_over_v():
    p = _two_inputs(
        alloc("%g"),
        kernel("g", OpKind.NEG, ("%g",), ("A",)),
        alloc("%vn"),
        kernel("x", OpKind.SGD_MOMENTUM, ("%b", "%vn"), ("%a", "%g", "%b")),
        dealloc("%g"),
        dealloc("%vn"),
    )
    assert_only(p, "IR-6")


def test_ir6_stencil_in_place():
    assert_only(_two_inputs(kernel("x", OpKind.ROLL, ("%a",), ("%a",))), "IR-6")


def test_ir6_input_used_twice_only_one_position_allowed():
    # sgd_momentum: w_new may overwrite w (position 0) but not v (position 2)
    p = _two_inputs(
        alloc("%vn"),
        kernel("x", OpKind.SGD_MOMENTUM, ("%a", "%vn"), ("%a", "%b", "%a")),
        dealloc("%vn"),
    )
    assert_only(p, "IR-6")


def test_ir6_two_results_share_a_buffer():
    p = _two_inputs(alloc("%r"), kernel("x", OpKind.ADD_SUB, ("%r", "%r"), ("%a", "%b")), dealloc("%r"))
    assert_only(p, "IR-6")


def test_ir6_copy_in_place():
    assert_only(_two_inputs(copy("x", "%a", "%a")), "IR-6")


def test_ir6_through_a_view():
    p = _two_inputs(view("av", "%a", F4), kernel("x", OpKind.TRANSPOSE, ("av",), ("%a",)))
    assert_only(p, "IR-6")


def test_ir6_allowed_pair_of_different_types():
    p = _two_inputs(view("av", "%a", F22), kernel("x", OpKind.RELU, ("av",), ("%a",)))
    # reported first as IR-6 (an in-place pair of two types), and as a result of the wrong type (IR-1)
    assert ids(p) == ["IR-6", "IR-1"]
    with pytest.raises(InvariantViolation) as info:
        verify_program(p)
    assert info.value.invariant == "IR-6" and "their types differ" in str(info.value)


# --- MEM-1 ------------------------------------------------------------------


def _allocated(offsets: dict[str, int], peak: int | None = 64) -> Program:
    p = clean()
    return replace(p, offsets=tuple(offsets.items()), peak_bytes=peak)


def test_mem1_clean_allocation():
    # %s [0, 5], %r [3, 10], %t [7, 12]: %s and %t may share bytes
    p = _allocated({"%s": 0, "%r": 16, "%t": 0})
    assert program_violations(p) == []
    check_mem1(p)


def test_mem1_overlap_while_live():
    p = _allocated({"%s": 0, "%r": 8, "%t": 32})
    assert_only(p, "MEM-1")
    with pytest.raises(InvariantViolation) as info:
        check_mem1(p)
    assert info.value.invariant == "MEM-1"
    assert set(info.value.names) == {"%s", "%r"}


def test_mem1_alloc_and_dealloc_bound_the_live_range():
    # %r is deallocated at 10 and %t allocated at 7: sharing bytes is an overlap
    assert_only(_allocated({"%s": 0, "%r": 16, "%t": 16}), "MEM-1")


def test_mem1_missing_offset():
    assert_only(_allocated({"%s": 0, "%r": 16}), "MEM-1")


def test_mem1_allocated_without_offsets():
    assert_only(_allocated({}, peak=0), "MEM-1")


def test_mem1_outside_the_arena():
    assert_only(_allocated({"%s": 0, "%r": 16, "%t": 48}, peak=50), "MEM-1")


def test_mem1_offset_for_a_non_activation():
    assert_only(_allocated({"%s": 0, "%r": 16, "%t": 0, "A": 64}, peak=80), "MEM-1")


def test_mem1_not_checked_without_offsets():
    assert program_violations(clean()) == []


# --- messages ---------------------------------------------------------------


def test_error_names_the_instruction_and_shows_its_neighbours():
    p = _two_inputs(kernel("x", OpKind.ROLL, ("%a",), ("%a",)))
    error = program_violations(p)[0]
    text = str(error)
    assert text.startswith("IR-6: instruction 4 `kernel x = roll(@out %a, @in %a)`")
    lines = error.context.splitlines()
    assert [line.split(":")[0].strip() for line in lines] == ["1", "2", "3", "> 4", "5", "6"]
    assert "kernel  b = neg(@out %b, @in B)" in lines[2]  # the one before, in the canonical form
    assert "dealloc %a" in lines[4]  # the one after


def test_mem1_sweep_finds_exactly_the_overlapping_pairs() -> None:
    # against the definition, pair by pair, on random placements (some overlapping,
    # some with a dealloc before the alloc)
    import random

    from refcompiler.ir_verifier.mem1 import _overlapping

    rng = random.Random(7)
    for _ in range(200):
        n = rng.randrange(1, 12)
        placed, ranges = [], {}
        for k in range(n):
            lo = rng.randrange(0, 8) * 16
            placed.append((f"a{k}", lo, lo + rng.choice((16, 32, 48))))
            ranges[f"a{k}"] = (rng.randrange(0, 10), rng.randrange(-2, 14))
        want = [
            (i, j)
            for i in range(n)
            for j in range(i + 1, n)
            if ranges[placed[i][0]][0] <= ranges[placed[j][0]][1]
            and ranges[placed[j][0]][0] <= ranges[placed[i][0]][1]
            and placed[i][1] < placed[j][2]
            and placed[j][1] < placed[i][2]
        ]
        assert _overlapping(placed, ranges) == want


# --- remembered verdicts ----------------------------------------------------


def _counting_walks(monkeypatch: pytest.MonkeyPatch) -> list[Program]:
    import refcompiler.ir_verifier as verifier

    walked: list[Program] = []
    real = verifier._walk
    monkeypatch.setattr(verifier, "_walk", lambda p, bounds: walked.append(p) or real(p, bounds))
    return walked


def test_a_program_equal_to_a_valid_one_is_not_walked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    walked = _counting_walks(monkeypatch)
    p = replace(clean(), name="not verified before")
    assert program_violations(p) == []
    # what run_pipeline makes of a pass that changed nothing: a new, equal object
    assert program_violations(replace(p, passes=("sink_alloc",))) == []
    assert program_violations(p.with_instrs(list(p.instrs))) == []
    assert len(walked) == 1


def test_a_plain_program_is_known_by_its_objects_a_subclass_by_value(monkeypatch: pytest.MonkeyPatch) -> None:
    # A plain program made of other, equal objects is walked again (its
    # verdict is the same); a user's subclass, which has no identity key, is
    # compared by value with the recent valid ones of its kind.
    walked = _counting_walks(monkeypatch)
    p = replace(clean(), name="made twice")
    again = replace(p, instrs=tuple(replace(i) for i in p.instrs))
    assert again == p and program_violations(p) == [] and program_violations(again) == []
    assert len(walked) == 2

    class Mine(Program):
        pass

    mine = Mine(**{f: getattr(p, f) for f in ("name", "buffers", "instrs", "schedule", "saves")})
    assert program_violations(mine) == [] and len(walked) == 3
    assert program_violations(Mine(**{f: getattr(p, f) for f in ("name", "buffers", "instrs", "schedule", "saves")})) == []
    assert len(walked) == 3


def test_an_invalid_program_is_walked_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    walked = _counting_walks(monkeypatch)
    bad = edit(clean(), 12)  # never deallocated
    assert ids(bad) == ["IR-1"] and ids(bad) == ["IR-1"]
    assert len(walked) == 2


def test_a_verdict_holds_only_under_the_swap_points_it_was_reached_under() -> None:
    from refcompiler.mutants import activate

    stencil = _two_inputs(kernel("x", OpKind.ROLL, ("%a",), ("%a",)))
    with activate("inplace-stencil"):  # its spec declares roll in place: valid there
        assert program_violations(stencil) == []
    assert ids(stencil) == ["IR-6"]  # not under the correct spec


def test_a_verdict_kept_on_a_program_goes_with_a_change_of_passes_only(monkeypatch: pytest.MonkeyPatch) -> None:
    walked = _counting_walks(monkeypatch)
    p = replace(clean(), name="not verified before either")
    assert program_violations(p) == [] and len(walked) == 1
    assert program_violations(p.with_passes(("a",))) == [] and len(walked) == 1
    # offsets that overlap two live activations: MEM-1, although the code was valid
    names = [i.name for i in p.instrs if i.opcode is Opcode.ALLOC]
    overlapping = p.with_allocation(tuple((n, 0) for n in names), 16)
    assert "MEM-1" in ids(overlapping) and len(walked) == 2


def test_the_specs_a_walk_keeps_are_those_of_the_swap_points_installed() -> None:
    # The walk keeps the specs it asked for across walks, per swap table: a
    # swapped spec (here ``relu`` taking two inputs) is seen by the walks under
    # it, and the correct one again once it is gone, in either order.
    from specs import op_spec

    from refcompiler import spec, variants

    def two_input_relu(kind: OpKind):
        found = op_spec(kind)
        return replace(found, inputs=found.inputs * 2) if kind is OpKind.RELU else found

    def relu_reports(p: Program) -> list[str]:
        return [v.invariant for v in program_violations(p) if "relu takes" in str(v)]

    p = clean()
    assert program_violations(p) == []
    for _ in range(2):
        with variants.installed({spec.spec_of: two_input_relu}):
            assert relu_reports(p) == ["IR-1"]
            assert relu_reports(replace(p, name="other")) == ["IR-1"]  # a walk of its own, same table
        assert program_violations(replace(p, name="again")) == []


def test_a_kernel_found_well_formed_is_not_asked_again_under_the_same_swap_points(monkeypatch: pytest.MonkeyPatch) -> None:
    # A kernel's signature verdict is a function of the instruction and the
    # specs: kept per instruction object, so another program holding the same
    # kernels (a pass's result, another order) checks only its copies and its
    # new kernels. A malformed kernel is reported in every walk.
    from refcompiler.ir_verifier.walk import Walk

    asked: list[str] = []
    real = Walk.signature_ok
    monkeypatch.setattr(Walk, "signature_ok", lambda self, instr: asked.append(instr.name) or real(self, instr))
    p = clean()
    assert program_violations(replace(p, name="first")) == []
    first = list(asked)
    asked.clear()
    assert program_violations(replace(p, name="second")) == []
    assert "r" in first and asked == ["save"]  # the copy's types are the walk's: asked each time
    wrong = edit(p, 4, kernel("r", OpKind.RELU, ("%r",), ("v", "v")))  # relu takes one input
    assert "IR-1" in ids(wrong) and "IR-1" in ids(replace(wrong, name="again"))


def test_ir1_allocations_are_bounded_as_a_files_tensors_are(monkeypatch):
    """A pass that allocates more than memory holds, or a negative size, is
    IR-1 after it, before the allocator or the interpreter sees it."""
    from specs import Dtype, TensorType

    huge = insert(clean(), 0, alloc("%h", TensorType((1 << 36,), Dtype.FLOAT32)), dealloc("%h"))
    assert ids(huge) == ["IR-1"] and "more than the limit 16777216 (REFC_MAX_ELEMENTS)" in str(program_violations(huge)[0])
    negative = insert(clean(), 0, alloc("%n", TensorType((-4,), Dtype.FLOAT32)), dealloc("%n"))
    assert ids(negative) == ["IR-1"] and "has a dimension that is not a whole number" in str(program_violations(negative)[0])
    empty = insert(clean(), 0, alloc("%z", TensorType((0, 3), Dtype.FLOAT32)), dealloc("%z"))
    assert ids(empty) == ["IR-1"] and "of at least 1 (as in a graph)" in str(program_violations(empty)[0])
    # a view whose negative dimensions multiply to its source's size
    odd_view = edit(clean(), 2, view("v", "%s", TensorType((-1, -4), Dtype.FLOAT32)))
    assert "IR-1" in ids(odd_view) and "view v: float32[-1, -4] has a dimension" in str(program_violations(odd_view)[0])
    # all together: three allocations of 16 bytes under a limit of 20 bytes (twice it: 40)
    monkeypatch.setenv("REFC_MAX_BYTES", "20")
    found = [str(v) for v in program_violations(clean())]
    assert len(found) == 1 and "the program's allocations reach 48 bytes, more than twice the limit 20 (REFC_MAX_BYTES)" in found[0]


def test_a_program_holding_the_objects_of_a_valid_one_in_another_order_is_not_walked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # The walk reads no schedule: a program with the same instruction, buffer and
    # saves objects (``identity_key``: another order that compiled alike) is valid too.
    walked = _counting_walks(monkeypatch)
    p = replace(clean(), name="not verified before, in one order")
    assert program_violations(p) == [] and len(walked) == 1
    assert program_violations(replace(p, schedule=("another", "order"))) == [] and len(walked) == 1
    # the same instructions with other offsets are another program: MEM-1 is checked
    names = [i.name for i in p.instrs if i.opcode is Opcode.ALLOC]
    assert "MEM-1" in ids(p.with_allocation(tuple((n, 0) for n in names), 16)) and len(walked) == 2
