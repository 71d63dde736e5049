"""``sink_alloc``: each ``alloc`` moves to just before the first use of its
activation (DESIGN §5).

The first use is the first instruction that names the activation or one of its
views (a view's definition names its source, so that comes first). An
activation nothing uses is allocated right before its ``dealloc``. Allocs that
land before the same instruction keep their relative order.
"""

from __future__ import annotations

from refcompiler import ir_analysis
from refcompiler.ir import Instr, Opcode, Program

__all__ = ["sink_alloc"]


def _first_use(program: Program, name: str) -> int:
    found = ir_analysis.first_use(program, name)
    if found is None:
        found = ir_analysis.dealloc_index(program, name)
    return len(program.instrs) if found is None else found


def sink_alloc(program: Program) -> Program:
    """Every alloc placed right before its activation's first use."""
    allocs = [i for i in program.instrs if i.opcode is Opcode.ALLOC]
    rest = program.with_instrs([i for i in program.instrs if i.opcode is not Opcode.ALLOC])
    before: dict[int, list[Instr]] = {}
    for alloc in allocs:
        before.setdefault(_first_use(rest, alloc.name), []).append(alloc)
    out: list[Instr] = []
    for i, instr in enumerate(rest.instrs):
        out.extend(before.get(i, ()))
        out.append(instr)
    out.extend(before.get(len(rest.instrs), ()))
    return program.with_instrs(out)  # the program itself when nothing moved
