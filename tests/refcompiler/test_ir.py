"""The IR's own values (refcompiler.ir)."""

from __future__ import annotations

from specs import OpKind

from refcompiler.ir import Instr, Opcode, Operand, OperandKind

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
