"""MEM-1: two activations live at the same time never share a byte (see ``refcompiler.ir_verifier``)."""

from __future__ import annotations

import bisect
import heapq

from refcompiler.errors import InvariantViolation
from refcompiler.ir import Opcode, Program
from refcompiler.ir_analysis import analyze, live_ranges
from refcompiler.ir_text import ir_violation

__all__ = ["check_mem1", "mem1_violations"]


def check_mem1(program: Program) -> None:
    """Raise the first MEM-1 violation: simultaneously live activations overlapping in the arena."""
    found = mem1_violations(program)
    if found:
        raise found[0]


def mem1_violations(program: Program) -> list[InvariantViolation]:
    """MEM-1 over ``program.offsets``, with live ranges computed here (alloc to dealloc)."""
    ranges = live_ranges(program)
    alloc = Opcode.ALLOC  # a local: an enum class's attribute is slow (3.11)
    types = {i.name: i.type for i in program.instrs if i.opcode is alloc and i.type is not None}
    offsets = program.offset_of
    views = analyze(program).sources  # only read
    found: list[InvariantViolation] = []

    def report(index: int, message: str, *names: str) -> None:
        if program.instrs:
            found.append(ir_violation(program, index, "MEM-1", message, *names))
        else:
            found.append(InvariantViolation("MEM-1", message, names=names))

    for name in offsets:
        if name not in ranges and name not in views:
            report(0, f"offset given for {name}, which is not an activation", name)
    placed: list[tuple[str, int, int]] = []  # (name, first byte, end byte)
    for name, (start, _) in ranges.items():
        if name not in offsets:
            report(start, f"activation {name} has no arena offset", name)
            continue
        if name not in types:
            continue
        lo, hi = offsets[name], offsets[name] + types[name].nbytes
        if lo < 0 or (program.peak_bytes is not None and hi > program.peak_bytes):
            report(start, f"{name} at bytes [{lo}, {hi}) lies outside the arena of {program.peak_bytes} bytes", name)
        placed.append((name, lo, hi))
    for i, j in _overlapping(placed, ranges):
        (a, a_lo, a_hi), (b, b_lo, b_hi) = placed[i], placed[j]
        (a_start, a_end), (b_start, b_end) = ranges[a], ranges[b]
        report(
            max(a_start, b_start),
            f"{a} (bytes [{a_lo}, {a_hi}), live {a_start}..{a_end}) and {b} "
            f"(bytes [{b_lo}, {b_hi}), live {b_start}..{b_end}) overlap while both are live",
            a,
            b,
        )
    return found


def _overlapping(placed: list[tuple[str, int, int]], ranges: dict[str, tuple[int, int]]) -> list[tuple[int, int]]:
    """Every pair ``(i, j)``, ``i < j``, of ``placed`` activations live at a common
    instruction and sharing a byte, sorted. A sweep over live-range starts: each
    activation is compared only with those still live when it starts, found by
    their bytes while those are disjoint (else by looking at every one)."""
    pairs: list[tuple[int, int]] = []
    ends: list[tuple[int, int]] = []  # heap of (live end, i)
    by_bytes: list[tuple[int, int, int]] = []  # (first byte, end byte, i) of the live ones, sorted
    for j in sorted(range(len(placed)), key=lambda k: ranges[placed[k][0]][0]):
        name, lo, hi = placed[j]
        start, end = ranges[name]
        while ends and ends[0][0] < start:
            i = heapq.heappop(ends)[1]
            del by_bytes[bisect.bisect_left(by_bytes, (placed[i][1], placed[i][2], i))]
        for i in _sharing_bytes(by_bytes, lo, hi, disjoint=not pairs):
            if ranges[placed[i][0]][0] <= end:  # started no later; ends no earlier than ``start``
                pairs.append((min(i, j), max(i, j)))
        bisect.insort(by_bytes, (lo, hi, j))
        heapq.heappush(ends, (end, j))
    return sorted(set(pairs))


def _sharing_bytes(by_bytes: list[tuple[int, int, int]], lo: int, hi: int, *, disjoint: bool) -> list[int]:
    """The blocks of ``by_bytes`` that share a byte with ``[lo, hi)``. While the
    blocks are disjoint their ends grow with their starts, so the search stops
    at the first block, going down from ``hi``, that ends at or before ``lo``."""
    below = bisect.bisect_left(by_bytes, (hi,))  # blocks starting before ``hi``
    if not disjoint:
        return [i for b_lo, b_hi, i in by_bytes[:below] if b_hi > lo]
    found = []
    for k in range(below - 1, -1, -1):
        if by_bytes[k][1] <= lo:
            break
        found.append(by_bytes[k][2])
    return found
