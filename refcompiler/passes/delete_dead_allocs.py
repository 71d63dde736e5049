"""``delete_dead_allocs``: remove the ``alloc``/``dealloc`` pairs and the views
that no data instruction needs (DESIGN §5).

A view is needed when a kernel or copy names it, or a needed view is a view of
it; an activation is needed when a kernel or copy names it or a needed view is
a view of it. Everything else that ``alloc``, ``dealloc`` or ``view`` defines
goes.
"""

from __future__ import annotations

from refcompiler import ir_analysis
from refcompiler.ir import Opcode, Program

__all__ = ["delete_dead_allocs"]


def _needed(program: Program) -> set[str]:
    needed: set[str] = set()
    kernel, copy = Opcode.KERNEL, Opcode.COPY  # locals: an enum class's attribute is slow (3.11)
    for instr in program.instrs:
        if instr.opcode is kernel or instr.opcode is copy:  # ``ir_analysis.is_data``
            needed.update([o.name for o in instr.operands])
    sources = ir_analysis.view_sources(program)
    frontier = [n for n in needed if n in sources]
    while frontier:
        source = sources[frontier.pop()]
        if source not in needed:
            needed.add(source)
            if source in sources:
                frontier.append(source)
    return needed


def delete_dead_allocs(program: Program) -> Program:
    """The program without allocs, deallocs and views nothing needs."""
    needed = _needed(program)
    alloc, dealloc, view = Opcode.ALLOC, Opcode.DEALLOC, Opcode.VIEW
    kept = [i for i in program.instrs if (i.opcode is not alloc and i.opcode is not dealloc and i.opcode is not view) or i.name in needed]
    return program.with_instrs(kept)  # the program itself when nothing was dead
