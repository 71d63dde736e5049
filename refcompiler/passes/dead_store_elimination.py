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

from refcompiler import ir_analysis
from refcompiler.ir import Program
from refcompiler.variants import swappable

__all__ = ["dead_store_elimination", "is_observable"]


@swappable
def is_observable(program: Program, buffer_name: str) -> bool:
    """Whether a write to ``buffer_name`` (an origin) is seen after the program:
    every module buffer (placeholders and owned state; constants are never
    written), no activation."""
    buffer = program.buffer_by_name.get(buffer_name)
    return buffer is not None and buffer.kind.module_level


def _dead(program: Program, index: int) -> bool:
    writes = ir_analysis.written_names(program.instrs[index])
    if not writes:
        return False
    for name in writes:
        if is_observable(program, ir_analysis.origin(program, name)):
            return False
        if any(i > index for i in ir_analysis.readers(program, name)):
            return False
    return True


def dead_store_elimination(program: Program) -> Program:
    """The program without its dead stores (see module doc)."""
    for index in reversed(range(len(program.instrs))):
        if ir_analysis.is_data(program.instrs[index]) and _dead(program, index):
            program = program.with_instrs(program.instrs[:index] + program.instrs[index + 1:])
    return program
