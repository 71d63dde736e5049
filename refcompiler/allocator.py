"""The arena allocator (DESIGN §5): offsets from live intervals, first fit.

Every activation (a name an ``alloc`` defines) gets a byte offset in one flat
arena; a ``view`` takes no space of its own. An activation is live from the
first to the last instruction that uses it, directly or through a view (see
``live_interval``); two activations whose intervals share an instruction get
disjoint bytes, and space is reused once its activation is dead. Sizes are
rounded up to ``ALIGN`` bytes, so every offset is a multiple of ``ALIGN``.

After placing, ``allocate`` checks MEM-1 with the IR verifier's own liveness
(``refcompiler.ir_verifier.check_mem1``, alloc to dealloc), which does not
trust ``live_interval``. The two agree on programs whose ``alloc`` comes right
before the first use and ``dealloc`` right after the last one, up to other
allocs, deallocs and views in between: what lowering and the passes produce.
"""

from __future__ import annotations

from dataclasses import replace

from refcompiler.ir import Opcode, Program
from refcompiler.ir_analysis import Analysis, analyze
from refcompiler.ir_verifier import check_mem1
from refcompiler.variants import swappable

__all__ = ["allocate", "live_interval", "ALIGN"]

ALIGN = 16


@swappable
def live_interval(program: Program, name: str) -> tuple[int, int]:
    """First and last instruction index at which activation ``name`` is live.

    Live from the first to the last instruction that uses it or a view of it
    (a view instruction counts), when its ``alloc`` sits right before that
    first use (only other allocs in between) and its ``dealloc`` right after
    that last use (only other deallocs in between), as lowering and the passes
    place them. Otherwise the interval runs from the ``alloc`` itself, or to
    the ``dealloc`` itself (the end of the program if there is none), so that
    it always covers what the IR verifier's MEM-1 (alloc to dealloc) sees.
    An activation nothing uses is live from its ``alloc`` to its ``dealloc``.
    """
    facts = analyze(program)
    instrs = program.instrs
    alloc = facts.allocs.get(name)
    start = 0 if alloc is None else alloc
    dealloc = facts.deallocs.get(name)
    end = len(instrs) if dealloc is None else dealloc
    used = facts.uses_of(name)
    if not used:
        return start, end
    first, last = used[0], used[-1]
    if _only(facts, Opcode.ALLOC, start + 1, first):
        start = first
    if dealloc is not None and _only(facts, Opcode.DEALLOC, last + 1, dealloc):
        end = last
    return start, max(end, last)


def _only(facts: Analysis, opcode: Opcode, lo: int, hi: int) -> bool:
    """Whether every instruction at an index in ``[lo, hi)`` has ``opcode``."""
    if lo >= hi:
        return True
    return facts.program.instrs[lo].opcode is opcode and facts.run_end(lo) >= hi - 1


def allocate(program: Program) -> Program:
    """``program`` with ``offsets`` (in ``alloc`` order) and ``peak_bytes`` set.

    Activations are placed in order of their interval's start, each at the
    lowest offset where it overlaps no activation live at the same time
    (first fit). Raises MEM-1 (``InvariantViolation``) if the result overlaps
    two simultaneously live activations in the IR verifier's view.
    """
    facts = analyze(program)
    names = list(facts.allocs)
    intervals = {n: live_interval(program, n) for n in names}
    sizes = {n: _aligned(facts.types[n].nbytes) for n in names}
    live: list[tuple[int, int, int]] = []  # (offset, size, interval end) of placed activations maybe still live
    offsets: dict[str, int] = {}
    for name in sorted(names, key=lambda n: intervals[n][0]):
        start, end = intervals[name]
        # only activations still live at ``start`` can collide: later ones are
        # placed later, and starts only grow, so the dead ones can go for good
        live = [entry for entry in live if entry[2] >= start]
        offsets[name] = _first_fit(sorted(entry[:2] for entry in live), sizes[name])
        live.append((offsets[name], sizes[name], end))
    peak = max((offsets[n] + sizes[n] for n in names), default=0)
    result = replace(program, offsets=tuple((n, offsets[n]) for n in names), peak_bytes=peak)
    check_mem1(result)
    return result


def _first_fit(busy: list[tuple[int, int]], size: int) -> int:
    """The lowest offset where ``size`` bytes fit between the ``busy`` blocks (sorted)."""
    offset = 0
    for start, length in busy:
        if offset + size <= start:
            return offset
        offset = max(offset, start + length)
    return offset


def _aligned(nbytes: int) -> int:
    return max(ALIGN, -(-nbytes // ALIGN) * ALIGN)
