"""Tiny constructors for hand-written IR programs in tests (plain dataclasses)."""

from __future__ import annotations

from specs import Dtype, OpKind, TensorType

from refcompiler.ir import Buffer, BufferKind, Instr, Opcode, Operand, OperandKind, Program, Save

F4 = TensorType((4,), Dtype.FLOAT32)
F22 = TensorType((2, 2), Dtype.FLOAT32)
F2 = TensorType((2,), Dtype.FLOAT32)
F8 = TensorType((8,), Dtype.FLOAT32)


def const(name: str, type: TensorType = F4) -> Buffer:
    return Buffer(name, BufferKind.CONSTANT, type)


def placeholder(name: str, type: TensorType = F4) -> Buffer:
    return Buffer(name, BufferKind.PLACEHOLDER, type)


def owned(name: str, owner: str, type: TensorType = F4) -> Buffer:
    return Buffer(name, BufferKind.OWNED, type, owner=owner)


def alloc(name: str, type: TensorType = F4) -> Instr:
    return Instr(Opcode.ALLOC, name, type=type)


def dealloc(name: str) -> Instr:
    return Instr(Opcode.DEALLOC, name)


def view(name: str, source: str, type: TensorType = F22) -> Instr:
    return Instr(Opcode.VIEW, name, (Operand(OperandKind.IN, source),), type=type)


def copy(name: str, dest: str, source: str) -> Instr:
    return Instr(Opcode.COPY, name, (Operand(OperandKind.OUT, dest), Operand(OperandKind.IN, source)))


def kernel(
    name: str,
    op: OpKind,
    outs: tuple[str, ...] = (),
    ins: tuple[str, ...] = (),
    state: tuple[str, ...] = (),
    attrs: tuple[tuple[str, object], ...] = (),
) -> Instr:
    operands = (
        *(Operand(OperandKind.OUT, n) for n in outs),
        *(Operand(OperandKind.IN, n) for n in ins),
        *(Operand(OperandKind.INOUT, n) for n in state),
    )
    return Instr(Opcode.KERNEL, name, operands, op=op, attrs=attrs)


def save(node: str, target: str, producer: str | None = None) -> Save:
    return Save(node, target, producer)


def program(
    buffers: tuple[Buffer, ...] | list[Buffer], *instrs: Instr, saves: tuple[Save, ...] = (), name: str = "t"
) -> Program:
    return Program(name, tuple(buffers), tuple(instrs), saves=tuple(saves))


def opcodes_and_names(p: Program) -> list[tuple[str, str]]:
    """A compact view of a program for assertions."""
    return [(i.opcode.value, i.name) for i in p.instrs]


def verified(pass_fn, p: Program) -> Program:  # type: ignore[no-untyped-def]
    """``pass_fn(p)``, with the IR verifier run on its input and on its output."""
    from refcompiler.ir_verifier import verify_program

    verify_program(p)
    out = pass_fn(p)
    verify_program(out)
    return out


def operands(p: Program, name: str) -> list[str]:
    """The operand names of the kernel or copy named ``name``."""
    (instr,) = [i for i in p.instrs if i.name == name and i.opcode in (Opcode.KERNEL, Opcode.COPY)]
    return [o.name for o in instr.operands]
