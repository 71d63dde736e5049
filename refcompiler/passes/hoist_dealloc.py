"""``hoist_dealloc``: each ``dealloc`` moves to right after the last use of its
activation, uses through views included (DESIGN §5).

A ``dealloc`` of an activation nothing uses goes right after its ``alloc``.
Deallocs that land after the same instruction keep their relative order.
"""

from __future__ import annotations

from refcompiler import ir_analysis
from refcompiler.ir import Instr, Opcode, Program
from refcompiler.variants import replaced, swappable

__all__ = ["hoist_dealloc", "last_use"]


@swappable
def last_use(program: Program, name: str) -> int:
    """Index of the last instruction that uses ``name`` or a view of it; its
    ``alloc``'s index when nothing uses it (-1 when it has none)."""
    found = ir_analysis.last_use(program, name)
    if found is None:
        found = ir_analysis.alloc_index(program, name)
    return -1 if found is None else found


def hoist_dealloc(program: Program) -> Program:
    """Every dealloc placed right after its activation's last use."""
    if not program.offsets and program.peak_bytes is None and not replaced(last_use) and _in_place(program):
        return program  # what the rewrite below gives when nothing moves, found without making it
    dealloc = Opcode.DEALLOC  # a local: an enum class's attribute is slow (3.11)
    deallocs = [i for i in program.instrs if i.opcode is dealloc]
    rest = program.with_instrs([i for i in program.instrs if i.opcode is not dealloc])
    if rest is not program:  # its analysis, moved from the input's rather than from a scan of its own
        ir_analysis.give_analysis(rest, ir_analysis.analyze(program).moved(rest))
    after: dict[int, list[Instr]] = {}
    for dealloc in deallocs:
        after.setdefault(last_use(rest, dealloc.name), []).append(dealloc)
    out: list[Instr] = []
    for position in sorted(p for p in after if p < 0):  # defensive: before everything
        out.extend(after[position])
    for i, instr in enumerate(rest.instrs):
        out.append(instr)
        out.extend(after.get(i, ()))
    result = program.with_instrs(out)  # the program itself when nothing moved
    if result is not program:  # only deallocs moved: the allocator reads its analysis next
        ir_analysis.give_analysis(result, ir_analysis.analyze(rest).moved(result))
    return result


def _in_place(program: Program) -> bool:
    """Whether every dealloc already sits where ``hoist_dealloc`` puts it, with
    ``last_use`` as written: right after its activation's last use (else its
    alloc), up to other deallocs, or before everything when it has neither.
    Uses and allocs are no deallocs, so ``program``'s own analysis gives the
    instruction that ``last_use`` finds in ``program`` without its deallocs,
    and the rewrite keeps the deallocs after one instruction in their order."""
    facts = ir_analysis.analyze(program)
    dealloc_op, allocs = Opcode.DEALLOC, facts.allocs
    before = -1  # index of the last instruction seen that is no dealloc
    for index, instr in enumerate(program.instrs):
        if instr.opcode is not dealloc_op:
            before = index
            continue
        used = facts.uses_of(instr.name)
        if (used[-1] if used else allocs.get(instr.name, -1)) != before:
            return False
    return True
