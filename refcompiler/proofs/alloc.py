"""Allocation proofs with Z3: MEM-1 of an allocated program, and the optimal peak.

Both work from this module's own liveness (``live_ranges``), independent of
the allocator (whose ``live_interval`` a mutant may swap) and of the IR
verifier. An activation occupies its bytes from its ``alloc`` (which poisons
the region) to its ``dealloc`` (which poisons it again), and to any later use
of it or of a view of it, were there one: the widest reading, so that a use
after free also shows up as an overlap.

- ``check_mem1``: asks Z3 for an instruction index ``t`` and an arena byte
  ``x`` that two live activations both cover. ``sat``: MEM-1 is broken and the
  model names the two buffers, the instruction and the byte. ``unsat``: proved.
- ``optimal_peak``: minimises the arena size over all placements (same
  alignment as the allocator) subject to MEM-1, for small programs; the
  allocator's first-fit peak can then be compared with the optimum.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from refcompiler.errors import InvariantViolation, UsageError
from refcompiler.ir import Opcode, OperandKind, Program
from refcompiler.proofs import smt
from refcompiler.proofs.proof import Verdict

__all__ = ["Activation", "activations", "check_mem1", "optimal_peak", "OptimalPeak", "clique_bound", "DEFAULT_ALIGN"]

# The allocator rounds sizes up to 16 bytes (``refcompiler.allocator.ALIGN``); kept
# here as a value so that this independent check does not import the allocator.
DEFAULT_ALIGN = 16


@dataclass(frozen=True)
class Activation:
    """An arena activation: bytes ``[offset, offset + size)`` busy during
    instructions ``start..end`` (inclusive); ``offset`` is ``None`` before allocation."""

    name: str
    size: int
    start: int
    end: int
    offset: int | None

    def overlaps_in_time(self, other: "Activation") -> bool:
        return self.start <= other.end and other.start <= self.end


def activations(program: Program) -> list[Activation]:
    """Every ``alloc``-ed activation with its size, live range and offset, in
    ``alloc`` order (see the module docstring for the live range)."""
    instrs = program.instrs
    origin: dict[str, str] = {}
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    sizes: dict[str, int] = {}
    dealloc: dict[str, int] = {}

    def root(name: str) -> str:
        seen = set()
        while name in origin and name not in seen:
            seen.add(name)
            name = origin[name]
        return name

    def touch(name: str, i: int) -> None:
        name = root(name)
        first.setdefault(name, i)
        last[name] = i

    for i, instr in enumerate(instrs):
        if instr.opcode is Opcode.ALLOC:
            if instr.type is None:
                raise UsageError(f"alloc of '{instr.name}' at instruction {i} has no type")
            sizes.setdefault(instr.name, instr.type.nbytes)
            touch(instr.name, i)
        elif instr.opcode is Opcode.DEALLOC:
            dealloc.setdefault(instr.name, i)
            touch(instr.name, i)
        elif instr.opcode is Opcode.VIEW:
            sources = [o.name for o in instr.operands if o.kind is OperandKind.IN]
            if sources:
                origin[instr.name] = sources[0]
        for operand in instr.operands:
            touch(operand.name, i)
    offsets = program.offset_of
    return [
        Activation(
            name=n,
            size=sizes[n],
            start=first[n],
            end=max(last[n], dealloc.get(n, len(instrs))),
            offset=offsets.get(n),
        )
        for n in sizes
    ]


def check_mem1(program: Program, *, timeout: float | None = None) -> Verdict:
    """Prove MEM-1 for an allocated ``program`` with Z3.

    Returns ``PROVED`` (no instruction at which two live activations share a
    byte) or ``INCONCLUSIVE`` (Z3 unknown or timeout); raises MEM-1 naming the
    two activations, the instruction and the byte, and ``UsageError`` if the
    program has not been allocated.
    """
    acts = activations(program)
    missing = [a.name for a in acts if a.offset is None]
    if missing:
        raise UsageError(f"program '{program.name}' has no arena offset for {', '.join(missing)}; allocate it first")
    deadline = None if timeout is None else time.monotonic() + timeout
    t, x = smt.int_vars(("t", "x"), prefix="mem1.").values()
    covers = [
        smt.all_of(a.start <= t, t <= a.end, a.offset <= x, x < a.offset + a.size)  # type: ignore[operator]
        for a in acts
    ]
    s = smt.solver()
    s.add(smt.count_true(covers) >= 2)
    answer = smt.check(s, deadline=deadline)
    if answer is smt.SatResult.UNSAT:
        return Verdict.PROVED
    if answer is smt.SatResult.UNKNOWN:
        return Verdict.INCONCLUSIVE
    where = smt.int_model(s, {"t": t, "x": x})
    both = [a for a in acts if a.start <= where["t"] <= a.end and a.offset <= where["x"] < a.offset + a.size]  # type: ignore[operator]
    first, second = both[0], both[1]
    raise InvariantViolation(
        "MEM-1",
        f"activations '{first.name}' (bytes {first.offset}..{first.offset + first.size - 1}, "  # type: ignore[operator]
        f"live at instructions {first.start}..{first.end}) and '{second.name}' (bytes {second.offset}.."
        f"{second.offset + second.size - 1}, live at {second.start}..{second.end}) "  # type: ignore[operator]
        f"both hold arena byte {where['x']} at instruction {where['t']}",
        names=(first.name, second.name),
    )


@dataclass(frozen=True)
class OptimalPeak:
    """``peak``: the smallest arena (bytes) any placement satisfying MEM-1 needs,
    with offsets and sizes in multiples of ``align``; ``None`` if Z3 did not
    finish (``verdict`` INCONCLUSIVE). ``lower_bound``: the most bytes live at
    one instruction, which no placement can beat. ``offsets``: an optimal
    placement (activation, byte offset), in ``alloc`` order."""

    verdict: Verdict
    peak: int | None
    lower_bound: int
    align: int
    offsets: tuple[tuple[str, int], ...] = ()


def _units(size: int, align: int) -> int:
    # as the allocator: at least one unit, rounded up
    return max(1, -(-size // align))


def clique_bound(acts: list[Activation], align: int = DEFAULT_ALIGN) -> int:
    """The largest total (aligned) size of activations live at one instruction."""
    points = {a.start for a in acts}
    best = 0
    for t in points:
        best = max(best, sum(_units(a.size, align) for a in acts if a.start <= t <= a.end))
    return best * align


def optimal_peak(program: Program, *, align: int = DEFAULT_ALIGN, timeout: float | None = None) -> OptimalPeak:
    """The optimal arena size for ``program``'s activations (Z3 ``Optimize``):
    offsets ``o_i >= 0`` in units of ``align``, ``o_i + size_i <= peak``, and two
    activations live at one time disjoint; minimise ``peak``. Exponential in
    the worst case: meant for small programs (tens of activations)."""
    if align < 1:
        raise UsageError(f"align must be at least 1, got {align}")
    acts = activations(program)
    bound = clique_bound(acts, align)
    if not acts:
        return OptimalPeak(Verdict.PROVED, 0, 0, align, ())
    deadline = None if timeout is None else time.monotonic() + timeout
    units = {a.name: _units(a.size, align) for a in acts}
    off = smt.int_vars((a.name for a in acts), prefix="off.")
    peak = smt.int_vars(("peak",), prefix="arena.")["peak"]
    o = smt.optimizer()
    for a in acts:
        o.add(off[a.name] >= 0, off[a.name] + units[a.name] <= peak)
    o.add(peak >= bound // align)  # a valid cut that spares Z3 proving it
    for i, a in enumerate(acts):
        for b in acts[i + 1 :]:
            if a.overlaps_in_time(b):
                o.add(smt.any_of(off[a.name] + units[a.name] <= off[b.name], off[b.name] + units[b.name] <= off[a.name]))
    smt.minimize(o, peak)
    answer = smt.check(o, deadline=deadline)
    if answer is not smt.SatResult.SAT:
        return OptimalPeak(Verdict.INCONCLUSIVE, None, bound, align)
    model = smt.int_model(o, {"peak": peak, **off})
    offsets = tuple((a.name, model[a.name] * align) for a in acts)
    return OptimalPeak(Verdict.PROVED, model["peak"] * align, bound, align, offsets)
