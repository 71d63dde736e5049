"""``eliminate_copies``: the producer of a saved value writes straight into the
placeholder (DESIGN §5).

A save lowers to ``copy P <- s`` (recorded in ``program.saves``). When ``s``
is an activation written by exactly one instruction, a kernel that produces it
as a plain ``@out`` result (not through a view, not in place on an input) and
is the save's recorded producer, the copy goes away: ``s`` is renamed to ``P``
everywhere and its ``alloc``/``dealloc`` are dropped.

Why that is legal: every read of ``P``'s entry value must come before the
producer, since from the producer on ``P`` holds the saved value
(``placeholder_read_after``, which sees readers through views too); every
later reader of ``s`` now reads ``P``, which nothing else writes (IR-4 allows
one writer, the copy being removed), so it reads the same value. Copies whose
destination is not a placeholder itself, or whose source is a view or a
module buffer, are left alone.
"""

from __future__ import annotations

from refcompiler import ir_analysis
from refcompiler.ir import BufferKind, Instr, Opcode, OperandKind, Program
from refcompiler.variants import swappable

__all__ = ["eliminate_copies", "placeholder_read_after"]


@swappable
def placeholder_read_after(program: Program, index: int, placeholder: str) -> bool:
    """Whether the instruction at ``index`` or a later one reads ``placeholder``,
    directly or through a view."""
    return any(i >= index for i in ir_analysis.readers(program, placeholder))


def eliminate_copies(program: Program) -> Program:
    """Remove every save copy whose producer can write the placeholder directly."""
    ordinal = 0  # copies before this one were found not eliminable
    while True:
        copies = [i for i, instr in enumerate(program.instrs) if instr.opcode is Opcode.COPY]
        if ordinal >= len(copies):
            return program
        eliminated = _eliminate(program, copies[ordinal])
        if eliminated is None:
            ordinal += 1
        else:
            program = eliminated  # the copy is gone: the next one takes its ordinal


def _producer(program: Program, source: str) -> int | None:
    """Index of the kernel that is the one writer of activation ``source``, writing
    it as a plain result and touching it in no other way; else ``None``."""
    writers = ir_analysis.writers(program, source)
    if len(writers) != 1:
        return None
    producer = program.instrs[writers[0]]
    if producer.opcode is not Opcode.KERNEL:
        return None
    on_source = [o for o in producer.operands if ir_analysis.origin(program, o.name) == source]
    if [(o.kind, o.name) for o in on_source] != [(OperandKind.OUT, source)]:
        return None
    return writers[0]


def _is_save_of(program: Program, copy: Instr, producer: Instr) -> bool:
    """The copy is a recorded save whose saved value ``producer`` computes (so that
    IR-4 lets the producer write the placeholder)."""
    target = copy.operands[0].name
    return any(
        s.node == copy.name and s.target == target and s.producer == producer.name for s in program.saves
    )


def _eliminate(program: Program, index: int) -> Program | None:
    copy = program.instrs[index]
    dest, source = copy.operands[0].name, copy.operands[1].name
    buffer = program.buffer_by_name.get(dest)
    if buffer is None or buffer.kind is not BufferKind.PLACEHOLDER:
        return None
    if source not in ir_analysis.activations(program):
        return None  # a view or a module buffer: leave the copy
    if ir_analysis.name_types(program).get(source) != buffer.type:
        return None
    producer = _producer(program, source)
    if producer is None or producer > index:
        return None
    if not _is_save_of(program, copy, program.instrs[producer]):
        return None
    if placeholder_read_after(program, producer, dest):
        return None
    out: list[Instr] = []
    for i, instr in enumerate(program.instrs):
        if i == index or (instr.opcode in (Opcode.ALLOC, Opcode.DEALLOC) and instr.name == source):
            continue
        out.append(ir_analysis.rename(instr, source, dest))
    return program.with_instrs(out)
