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

import bisect
import heapq

from refcompiler import memos, variants
from refcompiler.errors import InvariantViolation
from refcompiler.ir import IdentityTable, Opcode, Program, identity_key
from refcompiler.ir_analysis import Analysis, analyze
from refcompiler.ir_verifier import check_mem1
from refcompiler.variants import replaced, swappable

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
    return _interval(analyze(program), name)


def _interval(facts: Analysis, name: str) -> tuple[int, int]:
    """``live_interval`` from the program's analysis."""
    alloc = facts.allocs.get(name)
    start = 0 if alloc is None else alloc
    dealloc = facts.deallocs.get(name)
    end = len(facts.instrs) if dealloc is None else dealloc
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
    return facts.instrs[lo].opcode is opcode and facts.run_end(lo) >= hi - 1


def allocate(program: Program) -> Program:
    """``program`` with ``offsets`` (in ``alloc`` order) and ``peak_bytes`` set.

    Activations are placed in order of their interval's start, each at the
    lowest offset where it overlaps no activation live at the same time
    (first fit). Raises MEM-1 (``InvariantViolation``) if the result overlaps
    two simultaneously live activations in the IR verifier's view.

    What it gave a program holding the same objects (``identity_key``: another
    order of the graph that compiled alike) under the same swap points is
    given again, with this program's order and passes: placing and the MEM-1
    check read neither, so they would give the same offsets and verdict.
    """
    key = identity_key(program)
    swaps = variants.active()
    found = _ALLOCATED.result(key, swaps) if key is not None else None
    if found is not None:
        return found.with_schedule(program.schedule, program.passes)  # type: ignore[attr-defined]  # a Program
    result = _allocate(program)
    if key is not None:
        _ALLOCATED.put(key, swaps, program, result)
    return result


# Programs ``allocate`` recently made, by the ``identity_key`` of what it was
# given, under the swap table they were made with.
_ALLOCATED = memos.kept(IdentityTable(64))


def _allocate(program: Program) -> Program:
    """``allocate`` itself: place, then check MEM-1."""
    facts = analyze(program)
    names = list(facts.allocs)
    if replaced(live_interval):
        intervals = {n: live_interval(program, n) for n in names}
    else:  # as written: from the analysis at hand, without a call through the swap point per name
        intervals = {n: _interval(facts, n) for n in names}
    types = facts.types
    sizes = {n: _aligned(types[n].nbytes) for n in names}
    arena = _Arena()
    ends: list[tuple[int, int, int]] = []  # heap of (interval end, offset, size) of placed activations
    offsets: dict[str, int] = {}
    peak = 0
    for name in sorted(names, key=lambda n: intervals[n][0]):
        start, end = intervals[name]
        # only activations still live at ``start`` can collide: later ones are
        # placed later, and starts only grow, so the dead ones can go for good
        while ends and ends[0][0] < start:
            _, offset, size = heapq.heappop(ends)
            arena.release(offset, offset + size)
        size = sizes[name]
        offset = offsets[name] = arena.first_fit(size)
        arena.take(offset, offset + size)
        heapq.heappush(ends, (end, offset, size))
        peak = max(peak, offset + size)
    result = program.with_allocation(tuple([(n, offsets[n]) for n in names]), peak)
    try:
        check_mem1(result)
    except InvariantViolation as e:
        e.program = result
        raise
    return result


class _Arena:
    """The bytes the live activations hold (disjoint blocks), kept as maximal runs
    of busy bytes, so that first fit looks at gaps, not at every block."""

    def __init__(self) -> None:
        self.starts: list[int] = []  # run starts, sorted
        self.end: dict[int, int] = {}  # run start -> run end (exclusive)

    def first_fit(self, size: int) -> int:
        """The lowest offset where ``size`` bytes fit between the busy runs."""
        offset = 0
        for start in self.starts:
            if offset + size <= start:
                return offset
            offset = max(offset, self.end[start])
        return offset

    def take(self, lo: int, hi: int) -> None:
        """Mark ``[lo, hi)`` busy (it is free), merging it with the runs it touches."""
        at = bisect.bisect_left(self.starts, lo)
        if at < len(self.starts) and self.starts[at] == hi:  # a run starts where the block ends
            hi = self.end.pop(self.starts.pop(at))
        if at > 0 and self.end[self.starts[at - 1]] == lo:  # a run ends where the block starts
            self.end[self.starts[at - 1]] = hi
            return
        self.starts.insert(at, lo)
        self.end[lo] = hi

    def release(self, lo: int, hi: int) -> None:
        """Mark ``[lo, hi)`` free (it lies inside one run), splitting that run."""
        at = bisect.bisect_right(self.starts, lo) - 1
        start = self.starts[at]
        run_end = self.end[start]
        if start < lo:
            self.end[start] = lo
        else:
            del self.starts[at]
            del self.end[start]
            at -= 1
        if hi < run_end:
            self.starts.insert(at + 1, hi)
            self.end[hi] = run_end


def _aligned(nbytes: int) -> int:
    return max(ALIGN, -(-nbytes // ALIGN) * ALIGN)
