"""``dead_store_elimination``: remove data instructions whose every write is dead
(DESIGN §5).

A write is dead when its buffer is an activation (``is_observable`` says no:
placeholders and owned state outlive the program and are never dead) and no
later instruction reads that buffer, directly or through a view. An
instruction that writes nothing is kept. Instructions are visited from the
last to the first, so a removal can make earlier producers dead in the same
sweep. Allocs, deallocs and views left unused stay; ``delete_dead_allocs``
removes them.
"""

from __future__ import annotations

from typing import Callable

from refcompiler import ir_analysis
from refcompiler.ir import BufferKind, Instr, Opcode, OperandKind, Program
from refcompiler.variants import replaced, swappable

__all__ = ["dead_store_elimination", "is_observable"]


@swappable
def is_observable(program: Program, buffer_name: str) -> bool:
    """Whether a write to ``buffer_name`` (an origin) is seen after the program:
    every module buffer (placeholders and owned state; constants are never
    written), no activation."""
    return _observable(program, buffer_name)


def _observable(program: Program, buffer_name: str) -> bool:
    """``is_observable`` as written."""
    buffer = program.buffer_by_name.get(buffer_name)
    return buffer is not None and buffer.kind is not _ACTIVATION  # ``BufferKind.module_level``


def dead_store_elimination(program: Program) -> Program:
    """The program without its dead stores (see module doc).

    One backward sweep: ``read_later`` holds the origins that a kept data
    instruction after the current one reads, which is what a removal of the
    current one would have to preserve."""
    facts = ir_analysis.analyze(program)
    origin, instrs = facts.origin, program.instrs
    kernel, copy, out = Opcode.KERNEL, Opcode.COPY, OperandKind.OUT
    observable = is_observable if replaced(is_observable) else _observable  # as written: without the swap point's call
    read_later: set[str] = set()
    removed: set[int] = set()
    for index in reversed(range(len(instrs))):
        instr = instrs[index]
        if instr.opcode is not kernel and instr.opcode is not copy:  # no data instruction (``is_data``)
            continue
        if _dead(program, facts, instr, read_later, observable):
            removed.add(index)
        else:  # ``read_names``: its @in and @inout operands
            read_later.update([origin(o.name) for o in instr.operands if o.kind is not out])
    if not removed:
        return program
    return program.with_instrs([i for k, i in enumerate(program.instrs) if k not in removed])


_IN, _ACTIVATION = OperandKind.IN, BufferKind.ACTIVATION  # globals: an enum class's attribute is slow (3.11), and this is asked per operand


def _dead(
    program: Program, facts: ir_analysis.Analysis, instr: Instr, read_later: set[str], observable: Callable[[Program, str], bool]
) -> bool:
    """Whether the data instruction ``instr`` writes something and every write
    is dead (``observable``: ``is_observable``, or what it does as written)."""
    writes = False
    for operand in instr.operands:
        if operand.kind is _IN:  # ``written_names``: its @out and @inout operands, in order
            continue
        writes = True
        root = facts.origin(operand.name)
        if observable(program, root) or root in read_later:
            return False
    return writes
