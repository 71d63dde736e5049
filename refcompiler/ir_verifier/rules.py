"""IR-4 (placeholders written once, by their save, never read after it) and
IR-6 (no two written operands share a buffer; an input overwritten only where
its op allows it in place): the checks of one instruction, given what the
walk (``refcompiler.ir_verifier.walk.Walk``) has seen before it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from refcompiler.ir import Instr, Opcode, Operand, OperandKind
from refcompiler.spec import spec_of

if TYPE_CHECKING:
    from refcompiler.ir_verifier.walk import Walk

__all__ = ["check_ir4", "check_ir6"]

_IN, _OUT = OperandKind.IN, OperandKind.OUT  # globals: an enum class's attribute is slow (3.11)


def check_ir4(walk: "Walk", instr: Instr, placeholders: list[tuple[Operand, str]], entry_save: bool) -> None:
    """``placeholders``: the instruction's resolved operands whose origin is a
    placeholder, in order; ``entry_save``: the instruction is the copy of a save
    of a module buffer's value (``Walk.entry_saves``), whose reads mean the value at entry."""
    written_here = {r for o, r in placeholders if o.kind is not _IN}  # ``kind.writes``, without the property's call
    for operand, root in placeholders:
        if operand.kind is _OUT:  # ``not kind.reads``
            continue
        via = f" (through {operand.name})" if operand.name != root else ""
        if root in walk.saved_by_copy:
            at = walk.saved_by_copy[root]
            walk.report("IR-4", f"placeholder {root}{via} is read after its save at instruction {at}", root)
        elif root in written_here:
            walk.report("IR-4", f"placeholder {root}{via} is read by the instruction that writes it", root)
        elif entry_save and root in walk.placeholder_writer:
            at = walk.placeholder_writer[root]
            walk.report("IR-4", f"placeholder {root}{via} is read by save {instr.name}, which saves its value at entry, "
                                f"after instruction {at} wrote it", root)
    for root in sorted(written_here):
        allowed = walk.allowed_writers.get(root, ())
        if (instr.opcode, instr.name) not in allowed:
            who = " or ".join(sorted({f"the {op.value} {name}" for op, name in allowed}))
            why = f"only {who} may write it" if who else "it is never saved, so nothing may write it"
            writer = f"the {instr.opcode.value} {instr.name}"
            walk.report("IR-4", f"placeholder {root} is written by {writer}; {why}", root)
        if root in walk.placeholder_writer:
            at = walk.placeholder_writer[root]
            walk.report("IR-4", f"placeholder {root} is written again (first written at instruction {at})", root)
        else:
            walk.placeholder_writer[root] = walk.index
            if instr.opcode is Opcode.COPY:
                walk.saved_by_copy[root] = walk.index


def check_ir6(walk: "Walk", instr: Instr, resolved: list[tuple[int, Operand, str]]) -> None:
    writes: dict[str, list[Operand]] = {}
    for _, operand, root in resolved:
        if operand.kind.writes:
            writes.setdefault(root, []).append(operand)
    for root, operands in writes.items():
        if len(operands) > 1:
            names = ", ".join(o.name for o in operands)
            walk.report("IR-6", f"written operands {names} share the buffer {root}", root)
    inputs = [(p, o, r) for p, o, r in resolved if o.kind is OperandKind.IN]
    n_out = sum(1 for o in instr.operands if o.kind is OperandKind.OUT)
    for position, operand, root in resolved:
        if not operand.kind.writes:
            continue
        for in_position, source, source_root in inputs:
            if source_root != root:
                continue
            # kernel operands are results first, so input k sits at n_out + k
            why = _inplace_refusal(walk, instr, position, operand, in_position - n_out, source)
            if why is not None:
                walk.report("IR-6", why, root)

def _inplace_refusal(walk: "Walk", instr: Instr, result: int, out: Operand, input_pos: int, source: Operand) -> str | None:
    """Why ``out`` may not overwrite the input ``source`` (``None`` if it may)."""
    pair = f"{out.name} (@{out.kind.value}) and input {source.name} share a buffer"
    if instr.opcode is Opcode.COPY:
        return f"{pair}; a copy is never in place"
    if out.kind is OperandKind.INOUT:
        return f"{pair}; a state operand is never in place with an input"
    spec = spec_of(instr.op)  # type: ignore[arg-type]  # set: only called on well-formed kernels
    if input_pos not in spec.inplace_inputs(result):
        return f"{pair}, but {spec.name}'s result {result} may not overwrite input {input_pos}"
    out_type, in_type = walk.type_of(out.name), walk.type_of(source.name)
    if out_type != in_type:
        return f"{pair}, but their types differ ({out_type} and {in_type})"
    return None
