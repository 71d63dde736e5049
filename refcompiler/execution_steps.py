"""The steps of an execution plan (``refcompiler.execution_plan``): where an
operand's bytes are (``Loc``), and the poison, kernel and copy steps a run
performs in order (``Plan``), and the chunks an overlapping result is committed
in (``chunk_bounds``).

The steps and locations are slotted dataclasses, not named tuples: a run reads
their fields often, and a slot is read several times faster than a named
tuple's field. A plan is cached and shared: nothing changes them once made."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

from specs import TensorType

from refcompiler.errors import InvariantViolation
from refcompiler.ir import Buffer, Instr

__all__ = ["CHUNKS", "Loc", "PoisonStep", "KernelStep", "CopyStep", "Plan", "chunk_bounds"]

CHUNKS = 3  # chunks per result (fewer when it has fewer elements)


@lru_cache(maxsize=1024)
def chunk_bounds(size: int) -> tuple[tuple[int, int], ...]:
    """``CHUNKS`` consecutive pieces of ``range(size)`` (at least two when ``size >= 2``)."""
    k = max(1, min(size, CHUNKS))
    bounds = [size * i // k for i in range(k + 1)]
    return tuple(zip(bounds[:-1], bounds[1:], strict=True))


@dataclass(slots=True)
class Loc:
    """Where an operand's bytes are: bytes ``lo:hi`` of ``memory`` (a module
    buffer's name, ``None`` for the arena) seen as ``type``. ``origin`` is the
    activation or module buffer behind the name; ``buffer`` is that module
    buffer, ``None`` for the arena; ``slot`` is its place in ``Plan.locs``
    (a run's view of it is ``views[slot]``)."""

    origin: str
    memory: str | None
    lo: int
    hi: int
    type: TensorType
    buffer: Buffer | None
    slot: int = 0

    def same_bytes(self, other: "Loc") -> bool:
        return self.memory == other.memory and self.lo == other.lo and self.hi == other.hi

    def overlaps(self, other: "Loc") -> bool:
        return self.memory == other.memory and self.lo < other.hi and other.lo < self.hi


@dataclass(slots=True)
class PoisonStep:
    """An alloc's region, or the bytes a dealloc's activation still owns
    (``owned``: a mask over ``lo:hi``, ``None`` for all of them), filled with
    poison (DESIGN §5). The sanitizer flags any read of them before a write;
    the poison is what such a read would see if it did not."""

    index: int
    lo: int
    hi: int
    owned: object = None  # numpy bool array, or None


@dataclass(slots=True)
class KernelStep:
    """A kernel: ``poison`` are the ``@out`` results poisoned before it runs
    (those not in place that overlap bytes it reads: poison elsewhere is
    overwritten before anything can read it); ``targets`` are the results
    (``@out`` then ``@inout``) in commit order, each with whether it overlaps
    what the kernel reads (then it is committed chunk by chunk, the kernel
    computed again after each chunk); ``chunked``: whether any is, or
    anything is poisoned."""

    index: int
    instr: Instr
    attrs: Mapping[str, object]  # read-only: shared by the programs sharing the instruction
    ins: tuple[Loc, ...]
    state: tuple[Loc, ...]
    poison: tuple[Loc, ...]
    targets: tuple[tuple[Loc, bool], ...]
    chunked: bool


@dataclass(slots=True)
class CopyStep:
    """A copy of ``source`` into ``dest`` (the same type); when they overlap,
    ``dest`` is poisoned and copied chunk by chunk."""

    index: int
    instr: Instr
    dest: Loc
    source: Loc
    overlap: bool


@dataclass(frozen=True)
class Plan:
    """``steps`` before ``failure`` (``None``: the run ends well); ``locs``:
    every location the steps use, each once, in the order of their ``slot``."""

    steps: tuple[PoisonStep | KernelStep | CopyStep, ...]
    failure: Exception | None
    locs: tuple[Loc, ...] = ()

    def raise_failure(self) -> None:
        """Raise ``failure`` (a fresh copy of a violation: each run raises its own)."""
        f = self.failure
        if f is None:
            return
        if isinstance(f, InvariantViolation):
            raise f.at(f.stage)
        raise f
