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


def _first_use(facts: ir_analysis.Analysis, name: str, end: int) -> int:
    """Index of the first use of ``name`` (else of its first dealloc; else ``end``).
    Allocs neither use nor end a name, so the analysis of ``program`` tells what
    that of the program without its allocs would, at the same instructions."""
    found = facts.uses_of(name)
    if found:
        return found[0]
    return facts.deallocs.get(name, end)


def sink_alloc(program: Program) -> Program:
    """Every alloc placed right before its activation's first use."""
    facts = ir_analysis.analyze(program)
    instrs = program.instrs
    end = len(instrs)
    before: dict[int, list[Instr]] = {}  # index (in ``program``) of a non-alloc -> the allocs to put before it
    alloc = Opcode.ALLOC  # a local: an enum class's attribute is slow (3.11)
    for instr in instrs:
        if instr.opcode is alloc:
            before.setdefault(_first_use(facts, instr.name, end), []).append(instr)
    out: list[Instr] = []
    for i, instr in enumerate(instrs):
        if instr.opcode is alloc:
            continue
        out.extend(before.get(i, ()))
        out.append(instr)
    out.extend(before.get(end, ()))
    result = program.with_instrs(out)  # the program itself when nothing moved
    if result is not program:  # only allocs moved: its analysis is the input's, moved
        ir_analysis.give_analysis(result, facts.moved(result))
    return result
