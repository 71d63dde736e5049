"""The IR's own values (refcompiler.ir)."""

from __future__ import annotations

import pytest

from specs import OpKind

from refcompiler.ir import Instr, Opcode, Operand, OperandKind, Program

OUT, IN = OperandKind.OUT, OperandKind.IN


def test_renamed_renames_every_operand_at_once() -> None:
    add = Instr(Opcode.KERNEL, "n", (Operand(OUT, "%a"), Operand(IN, "%b"), Operand(IN, "%a")), OpKind.ADD)
    swapped = add.renamed({"%a": "%b", "%b": "%a"})  # a swap, not %a -> %b -> %a
    assert [o.name for o in swapped.operands] == ["%b", "%a", "%b"]
    assert swapped.name == "n" and swapped.op is OpKind.ADD  # a kernel keeps its node's name


def test_renamed_renames_what_an_alloc_dealloc_or_view_defines() -> None:
    view = Instr(Opcode.VIEW, "%v", (Operand(IN, "%a"),))
    assert view.renamed({"%v": "%w", "%a": "%b"}) == Instr(Opcode.VIEW, "%w", (Operand(IN, "%b"),))
    assert Instr(Opcode.DEALLOC, "%a").renamed({"%a": "%c"}).name == "%c"


def test_renamed_gives_the_instruction_itself_when_nothing_is_renamed() -> None:
    copy = Instr(Opcode.COPY, "s", (Operand(OUT, "out"), Operand(IN, "%a")))
    assert copy.renamed({"%z": "%y"}) is copy


def test_the_ir_built_directly_is_what_its_constructor_builds() -> None:
    # ``renamed`` and ``Program``'s copies build instances without ``__init__``
    # (``ir._plain``): the result is equal, hashes the same and holds the same fields.
    from dataclasses import fields

    from refcompiler.driver import compile_graph
    from refcompiler.ir import Instr, Operand, Program
    from refcompiler.proofs.scale import large_graph

    program = compile_graph(large_graph(30, seed=0), pipeline="O2").program
    names = {o.name: o.name + ".x" for i in program.instrs for o in i.operands}
    for instr in program.instrs:
        got = instr.renamed(names)
        want = Instr(
            instr.opcode,
            names.get(instr.name, instr.name) if instr.opcode.value in ("alloc", "dealloc", "view") else instr.name,
            tuple(Operand(o.kind, names[o.name]) for o in instr.operands),
            instr.op,
            instr.attrs,
            instr.type,
        )
        assert got == want and hash(got) == hash(want) and vars(got) == vars(want)
        assert all(vars(a) == vars(b) for a, b in zip(got.operands, want.operands))
    copied = program.with_passes(("again",))
    want = Program(**{f.name: getattr(program, f.name) for f in fields(Program) if f.name != "passes"}, passes=("again",))
    assert copied == want and copied.passes == ("again",)
    assert {k: v for k, v in vars(copied).items() if k in vars(want)} == vars(want)


def test_a_program_copy_refuses_a_keyword_that_is_no_field() -> None:
    # built directly, a copy would otherwise keep a misspelt keyword as a stray attribute
    program = Program("p", (), ())
    with pytest.raises(TypeError, match="'pases'"):
        program._copy(pases=("x",))
    assert program._copy(passes=("x",)).passes == ("x",)


def test_renaming_one_instruction_alike_gives_one_object() -> None:
    # Two orders whose copies a pass eliminates alike rename the same
    # instructions alike: one object each, so their programs hold the same objects.
    add = Instr(Opcode.KERNEL, "n", (Operand(OUT, "%a"), Operand(IN, "%b")), OpKind.ADD)
    renamed = add.renamed({"%a": "P", "%z": "Q"})
    assert add.renamed({"%a": "P"}) is renamed and [o.name for o in renamed.operands] == ["P", "%b"]
    assert add.renamed({"%a": "R"}) is not renamed and add.renamed({"%a": "R"}) == add.renamed({"%a": "R"})


def test_programs_share_an_identity_key_when_only_their_order_and_passes_differ() -> None:
    from dataclasses import replace

    from refcompiler.ir import identity_key

    add = Instr(Opcode.KERNEL, "n", (Operand(OUT, "%a"), Operand(IN, "%b")), OpKind.ADD)
    p = Program("p", (), (add,), schedule=("n",))
    assert identity_key(replace(p, schedule=("m", "n"), passes=("x",))) == identity_key(p)
    assert identity_key(replace(p, instrs=(Instr(Opcode.KERNEL, "n", add.operands, OpKind.ADD),))) != identity_key(p)  # equal, not the same
    assert identity_key(p.with_allocation((("%a", 0),), 16)) != identity_key(p)

    class Mine(Program):
        pass

    assert identity_key(Mine("p", (), (add,))) is None


def test_an_identity_table_answers_only_under_the_context_it_was_filled_in_and_empties_when_full() -> None:
    from refcompiler.ir import IdentityTable

    table, under, other = IdentityTable(2), object(), object()
    p, q, r = Program("p", (), ()), Program("q", (), ()), Program("r", (), ())
    table.put(("p",), under, p, "made for p")
    assert table.get(("p",), under) == (p, "made for p") and table.result(("p",), under) == "made for p"
    assert table.get(("p",), other) is None and table.get(("q",), under) is None
    assert table.result(("p",), other) is None and table.result(("q",), under) is None
    table.put(("q",), under, q, 1)
    table.put(("r",), under, r, 2)  # full: emptied first
    assert table.get(("p",), under) is None and table.get(("r",), under) == (r, 2)
