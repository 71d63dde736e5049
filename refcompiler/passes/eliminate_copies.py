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
    found = ir_analysis.analyze(program).readers(placeholder)
    return bool(found) and found[-1] >= index


def eliminate_copies(program: Program) -> Program:
    """Remove every save copy whose producer can write the placeholder directly.

    Copies are considered in program order, each against the program as the
    earlier eliminations left it. Those only rename an eliminated copy's source
    (an activation with one writer) to its placeholder and drop that copy and
    the source's alloc and dealloc: no fact a later decision reads changes,
    except that a copy whose source was renamed now copies a placeholder and is
    left alone. So every decision is taken on ``program`` itself (indices keep
    their order) and the renames are applied in one rewrite at the end.
    """
    facts = ir_analysis.analyze(program)
    renamed: dict[str, str] = {}  # eliminated copy's source -> its placeholder
    dropped: set[int] = set()
    saves = frozenset((save.node, save.target, save.producer) for save in program.saves)  # tuples: a save's hash is Python's
    copy, defining = Opcode.COPY, (Opcode.ALLOC, Opcode.DEALLOC)  # locals: an enum class's attribute is slow (3.11)
    for index, instr in enumerate(program.instrs):
        if instr.opcode is not copy or any(o.name in renamed for o in instr.operands):
            continue
        if _eliminable(program, facts, saves, index):
            renamed[instr.operands[1].name] = instr.operands[0].name
            dropped.add(index)
    if not renamed:
        return program
    out: list[Instr] = []
    for i, instr in enumerate(program.instrs):
        if i in dropped or (instr.opcode in defining and instr.name in renamed):
            continue
        out.append(instr.renamed(renamed))
    return program.with_instrs(out)


def _producer(program: Program, facts: ir_analysis.Analysis, source: str) -> int | None:
    """Index of the kernel that is the one writer of activation ``source``, writing
    it as a plain result and touching it in no other way; else ``None``."""
    writers = facts.writers(source)
    if len(writers) != 1:
        return None
    producer = program.instrs[writers[0]]
    if producer.opcode is not Opcode.KERNEL:
        return None
    on_source = [o for o in producer.operands if facts.origin(o.name) == source]
    if [(o.kind, o.name) for o in on_source] != [(OperandKind.OUT, source)]:
        return None
    return writers[0]


def _is_save_of(saves: frozenset[tuple[str, str, str | None]], copy: Instr, producer: Instr) -> bool:
    """The copy is a recorded save (``saves``: each save's fields) whose saved
    value ``producer`` computes (so that IR-4 lets the producer write the placeholder)."""
    return (copy.name, copy.operands[0].name, producer.name) in saves


def _eliminable(program: Program, facts: ir_analysis.Analysis, saves: frozenset[tuple[str, str, str | None]], index: int) -> bool:
    copy = program.instrs[index]
    dest, source = copy.operands[0].name, copy.operands[1].name
    buffer = program.buffer_by_name.get(dest)
    if buffer is None or buffer.kind is not BufferKind.PLACEHOLDER:
        return False
    if source not in facts.allocs:
        return False  # a view or a module buffer: leave the copy
    if facts.types.get(source) != buffer.type:
        return False
    producer = _producer(program, facts, source)
    if producer is None or producer > index:
        return False
    if not _is_save_of(saves, copy, program.instrs[producer]):
        return False
    return not placeholder_read_after(program, producer, dest)
