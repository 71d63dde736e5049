"""The sanitizer of the IR interpreter (DESIGN §5): shadow memory and access rules.

Shadow state is kept per arena byte: ``DEAD`` (no activation holds it),
``UNINIT`` (allocated, not yet written) or ``INIT``, plus the activation
that owns it. Module buffers need no per-byte state: they are never
allocated or freed, so every byte of them is initialised from start to end,
and each has one owner (an owned buffer's owner node) for all of its bytes.

The interpreter asks, before every instruction, in operand order:

- ``check_name``: the operand is a module buffer, a live activation, or a
  defined view of one (IR-1: no use before alloc, after dealloc, or of a name
  that is nothing);
- ``check_access``: no write to a constant (IR-3); owned state touched only by
  its owner's kernel, as ``@inout``, by its own name (IR-5); a placeholder
  written only by its save's copy or the saved value's producer, at most once
  per run, and not read after the copy wrote it (IR-4; a read after the
  producer wrote it is a read of the saved value, after copy elimination,
  except by the copy of a save of a module buffer's value,
  ``ir.entry_saves``, which reads the placeholder's value at entry);
- ``check_read``: every byte an ``@in``/``@inout`` operand covers is
  initialised (IR-1 if dead, IR-2 if uninitialised).

Each failure is an ``InvariantViolation`` naming the instruction, with the
instructions around it. The first one ends the run.
"""

from __future__ import annotations

import sys
from functools import lru_cache

import numpy as np

from refcompiler.errors import InvariantViolation
from refcompiler.ir import Buffer, BufferKind, Instr, Opcode, Operand, OperandKind, Program, entry_saves
from refcompiler.ir_text import ir_violation

__all__ = ["DEAD", "UNINIT", "INIT", "Shadow"]

DEAD, UNINIT, INIT = 0, 1, 2
_INIT_BYTE = bytes([INIT])
NO_OWNER = -1
_NO_OWNER_BYTES = NO_OWNER.to_bytes(4, sys.byteorder, signed=True)  # one int32 owner entry
# bytes of the arena from which a range's shadow is filled and compared with
# numpy: a bytearray pattern of that length costs more (and for a 16 MiB
# activation ten times more) than numpy's fill, which costs more below it
_NUMPY_FROM = 1 << 16


_IN, _OUT, _INOUT = OperandKind.IN, OperandKind.OUT, OperandKind.INOUT
_KERNEL, _COPY = Opcode.KERNEL, Opcode.COPY
_CONSTANT, _PLACEHOLDER, _OWNED = BufferKind.CONSTANT, BufferKind.PLACEHOLDER, BufferKind.OWNED


@lru_cache(maxsize=4096)
def _entry(k: int) -> bytes:
    """Owner ``k`` as one int32 entry of the owners' bytes."""
    return k.to_bytes(4, sys.byteorder, signed=True)


def _via(operand: Operand, origin: str) -> str:
    """How a message names the way ``operand`` reaches ``origin``."""
    return "" if operand.name == origin else f" (through {operand.name})"


class Shadow:
    """Shadow state of one run of ``program`` over an arena of ``size`` bytes."""

    def __init__(self, program: Program, size: int, ids: dict[str, int] | None = None):
        """``ids``: each activation's number, in the order of its first alloc
        in ``program`` (made here when not given)."""
        self.program = program
        # the state's and the owners' bytes (``state``/``owner`` are numpy views
        # of them): the checks of a few bytes at a time are bytearray operations
        # (far cheaper than numpy's on a small arena)
        self._state = bytearray(size)
        self._owner = bytearray(_NO_OWNER_BYTES * size)
        if ids is None:
            ids = {}
            alloc = Opcode.ALLOC
            for i in program.instrs:
                if i.opcode is alloc:
                    ids.setdefault(i.name, len(ids))
        self.ids = ids
        self.writers = program.placeholder_writers
        # the start of a run: the arena is dead, nothing allocated, no view defined, no placeholder written
        self.live: dict[str, int] = {}  # activation -> index of its alloc
        self.freed: dict[str, int] = {}  # activation -> index of its last dealloc
        self.views: set[str] = set()
        self.written: dict[str, int] = {}  # placeholder -> index of the instruction that wrote it
        self.saved_by_copy: dict[str, int] = {}  # the same, for a write by the save's copy

    @property
    def state(self) -> np.ndarray:
        """Each arena byte's state (``DEAD``, ``UNINIT``, ``INIT``), a view."""
        return np.frombuffer(self._state, dtype=np.uint8)

    @property
    def owner(self) -> np.ndarray:
        """Each arena byte's owner (an id of ``ids``, or ``NO_OWNER``), a view."""
        return np.frombuffer(self._owner, dtype=np.int32)

    def fail(self, index: int, inv: str, message: str, *names: str) -> InvariantViolation:
        return ir_violation(self.program, index, inv, message, *names)

    # -- lifetimes ---------------------------------------------------------

    def alloc(self, index: int, name: str, lo: int, hi: int) -> None:
        if name in self.live:
            raise self.fail(index, "IR-1", f"{name} is allocated again (already by instruction {self.live[name]})", name)
        self.live[name] = index
        self._mark(lo, hi, UNINIT, self.ids[name])

    def dealloc(self, index: int, name: str, lo: int, hi: int) -> np.ndarray | None:
        """End ``name``: the bytes it still owns die (the interpreter poisons
        them). Returns which of bytes ``lo:hi`` those are, ``None`` for all of
        them. Bytes another activation took over stay its."""
        if name not in self.live:
            why = f"already deallocated at instruction {self.freed[name]}" if name in self.freed else "not allocated"
            raise self.fail(index, "IR-1", f"dealloc of {name}, which is {why}", name)
        del self.live[name]
        self.freed[name] = index
        if self._owned_by(lo, hi, self.ids[name]):  # the common case: no other activation overlaps it
            self._mark(lo, hi, DEAD, NO_OWNER)
            return None
        owner, state = self.owner[lo:hi], self.state[lo:hi]
        mine = owner == self.ids[name]
        state[mine] = DEAD
        owner[mine] = NO_OWNER
        return mine

    def _mark(self, lo: int, hi: int, state: int, owner: int) -> None:
        """Bytes ``lo:hi`` take ``state`` and ``owner``."""
        if hi - lo < _NUMPY_FROM:
            self._state[lo:hi] = bytes([state]) * (hi - lo)
            self._owner[4 * lo : 4 * hi] = _entry(owner) * (hi - lo)
        else:
            self.state[lo:hi] = state
            self.owner[lo:hi] = owner

    def _owned_by(self, lo: int, hi: int, owner: int) -> bool:
        """Whether every byte of ``lo:hi`` is ``owner``'s."""
        if hi - lo < _NUMPY_FROM:
            return self._owner[4 * lo : 4 * hi] == _entry(owner) * (hi - lo)
        return not (self.owner[lo:hi] != owner).any()

    def define_view(self, name: str) -> None:
        self.views.add(name)

    # -- checks --------------------------------------------------------------

    def check_activation_live(self, index: int, operand: str, origin: str) -> None:
        """IR-1: ``origin`` (behind ``operand``) is allocated now."""
        if origin in self.live:
            return
        via = "" if operand == origin else f" (through {operand})"
        if origin in self.freed:
            why = f"after its dealloc at instruction {self.freed[origin]}"
        else:
            why = "before it is allocated"
        raise self.fail(index, "IR-1", f"{origin}{via} is used {why}", origin)

    def check_view_defined(self, index: int, name: str) -> None:
        if name not in self.views:
            raise self.fail(index, "IR-1", f"view {name} is used before its view instruction", name)

    def check_access(self, index: int, instr: Instr, operand: Operand, buffer: Buffer) -> None:
        """IR-3, IR-4, IR-5 for an operand whose origin is module buffer ``buffer``."""
        kind = buffer.kind
        if kind is _PLACEHOLDER:
            name = buffer.name
            if operand.kind is _IN and name not in self.saved_by_copy and (name not in self.written or instr.opcode is not _COPY):
                return  # the common case: a read not after the save's copy, nor by a copy after a write
            self._check_placeholder(index, instr, operand, buffer)
        elif kind is _CONSTANT:
            if operand.kind is not _IN:  # writes (``OperandKind.writes``)
                via = _via(operand, buffer.name)
                raise self.fail(index, "IR-3", f"constant {buffer.name}{via} is written (@{operand.kind.value})", buffer.name)
        elif kind is _OWNED:
            self._check_owned(index, instr, operand, buffer, _via(operand, buffer.name))

    def _check_owned(self, index: int, instr: Instr, operand: Operand, buffer: Buffer, via: str) -> None:
        if instr.opcode is not _KERNEL or instr.name != buffer.owner:
            raise self.fail(
                index,
                "IR-5",
                f"owned {buffer.name}{via} is touched by the {instr.opcode.value} {instr.name}; "
                f"only its owner's kernel {buffer.owner} may",
                buffer.name,
            )
        if operand.kind is not _INOUT or via:
            raise self.fail(
                index, "IR-5", f"owned {buffer.name}{via} is @{operand.kind.value} in its owner; only @inout by name", buffer.name
            )

    def _check_placeholder(self, index: int, instr: Instr, operand: Operand, buffer: Buffer) -> None:
        name, kind = buffer.name, operand.kind
        if kind is not _OUT and name in self.saved_by_copy:  # reads
            # a read after the producer wrote it (copy elimination) is a read of the saved value
            via = _via(operand, name)
            raise self.fail(
                index, "IR-4", f"placeholder {name}{via} is read after its save at instruction {self.saved_by_copy[name]}", name
            )
        if kind is not _OUT and name in self.written and instr.opcode is _COPY and instr.name in entry_saves(self.program):
            via = _via(operand, name)
            raise self.fail(index, "IR-4", f"placeholder {name}{via} is read by save {instr.name}, which saves its value at entry, "
                                           f"after instruction {self.written[name]} wrote it", name)
        if kind is _IN:  # writes nothing
            return
        if (instr.opcode, instr.name) not in self.writers.get(name, ()):
            via = _via(operand, name)
            allowed = " or ".join(f"{op.value} {n}" for op, n in self.writers.get(name, ())) or "nothing (it is not saved)"
            raise self.fail(index, "IR-4", f"placeholder {name}{via} is written by {instr.name}; only by {allowed}", name)
        if name in self.written and self.written[name] != index:
            raise self.fail(index, "IR-4", f"placeholder {name} is written again (first at instruction {self.written[name]})", name)
        self.written[name] = index
        if instr.opcode is _COPY:
            self.saved_by_copy[name] = index

    def check_read(self, index: int, operand: Operand, origin: str, lo: int, hi: int) -> None:
        """IR-1 / IR-2: every byte in ``lo:hi`` of the arena is initialised."""
        if self._state.count(INIT, lo, hi) == hi - lo:
            return
        state = self.state[lo:hi]
        bad = int(np.argmax(state != INIT))
        via = "" if operand.name == origin else f" (through {operand.name})"
        where = f"byte {lo + bad} of the arena (byte {bad} of {origin}{via})"
        if state[bad] == DEAD:
            raise self.fail(index, "IR-1", f"reads {where}, which is dead: no live activation holds it", origin)
        raise self.fail(index, "IR-2", f"reads {where}, which is uninitialised: nothing wrote it since its alloc", origin)

    def wrote(self, lo: int, hi: int) -> None:
        if hi - lo < _NUMPY_FROM:
            self._state[lo:hi] = _INIT_BYTE * (hi - lo)
        else:
            self.state[lo:hi] = INIT

    def finish(self) -> None:
        """IR-1 at the end of a run: every activation was deallocated."""
        if self.live:
            name, at = next(iter(self.live.items()))
            raise self.fail(at, "IR-1", f"{name} is never deallocated", name)
