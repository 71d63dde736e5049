"""The symbolic IR interpreter: ``refcompiler.interpreter``'s execution contract on terms.

Memory is as real as in the concrete interpreter, one word (4 bytes, every
dtype's size) per term id: one arena of ``peak_bytes / 4`` words at the
allocator's offsets, one array per module buffer; an operand is a slice of
its words, so views and shared buffers alias. ``alloc`` fills its region with
poison; ``dealloc`` poisons the words its activation still owns; before a
kernel runs, each ``@out`` is poisoned unless it is in a declared in-place
pair (``spec_of(op).inplace_inputs(k)``) with an input it aliases exactly;
results, then state, are committed in the same chunks, each chunk computed by
the whole-tensor symbolic kernel on memory as it is at that moment. A word
is read in the sort of the operand's dtype: poison bytes are a float32 NaN
and int32 -1, so float poison read as int32 is the integer -1 and back.

The access rules of the sanitizer (IR-1..IR-5) are not re-checked here: the
IR verifier has checked the program statically, and the concrete run that
confirms a counterexample runs under the sanitizer.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Mapping

import numpy as np

from specs import Dtype, TensorType

from refcompiler.errors import UsageError
from refcompiler.interpreter import CHUNKS
from refcompiler.ir import Buffer, BufferKind, Instr, Opcode, Operand, OperandKind, Program
from refcompiler.spec import spec_of
from refcompiler.symbolic.kernels import Context, run_symbolic_kernel
from refcompiler.symbolic.terms import Sort

__all__ = ["SymbolicMachine", "sort_of", "chunks"]

WORD = 4


def sort_of(dtype: Dtype) -> Sort:
    return Sort.I if dtype is Dtype.INT32 else Sort.F


@lru_cache(maxsize=1024)
def chunks(size: int) -> tuple[tuple[int, int], ...]:
    """The concrete interpreter's chunks of ``range(size)``: ``CHUNKS`` pieces, fewer when smaller."""
    k = max(1, min(size, CHUNKS))
    bounds = [size * i // k for i in range(k + 1)]
    return tuple(zip(bounds[:-1], bounds[1:], strict=True))


@dataclass(frozen=True)
class _Loc:
    """``memory[lo:hi]`` (words) seen as ``type``; ``buffer`` is the module buffer, if any."""

    memory: np.ndarray
    lo: int
    hi: int
    type: TensorType
    buffer: Buffer | None

    def flat(self) -> np.ndarray:
        return self.memory[self.lo : self.hi]

    def overlaps(self, other: "_Loc") -> bool:
        return self.memory is other.memory and self.lo < other.hi and other.lo < self.hi

    def same_words(self, other: "_Loc") -> bool:
        return self.memory is other.memory and self.lo == other.lo and self.hi == other.hi


class SymbolicMachine:
    """Runs an allocated program on terms. ``load`` the module buffers' starting
    terms (constants included), ``run`` as often as wanted, ``read_back``."""

    def __init__(self, program: Program, ctx: Context):
        if program.peak_bytes is None:
            raise UsageError(f"program {program.name!r} is not allocated")
        if program.peak_bytes % WORD or any(off % WORD for _, off in program.offsets):
            raise UsageError(f"program {program.name!r} has arena offsets that are not whole words")
        self.program, self.ctx, self.terms = program, ctx, ctx.terms
        self.arena = np.full(program.peak_bytes // WORD, self.terms.poison_f, dtype=np.int64)
        self.owner = np.full(self.arena.size, -1, dtype=np.int32)
        self.module = {b.name: np.full(b.type.size, self.terms.poison_f, dtype=np.int64) for b in program.buffers}
        self.alloc_types: dict[str, TensorType] = {}
        self.views: dict[str, tuple[str, TensorType]] = {}
        self.ids: dict[str, int] = {}
        for instr in program.instrs:
            if instr.opcode is Opcode.ALLOC and instr.type is not None:
                self.alloc_types.setdefault(instr.name, instr.type)
                self.ids.setdefault(instr.name, len(self.ids))
            elif instr.opcode is Opcode.VIEW and instr.type is not None and len(instr.operands) == 1:
                self.views.setdefault(instr.name, (instr.operands[0].name, instr.type))
        self.statics: dict[int, tuple] = {}  # per kernel's index: what ``static`` derives from it

    def load(self, values: Mapping[str, np.ndarray]) -> None:
        for name, value in values.items():
            if name in self.module:
                self.module[name][:] = np.asarray(value, dtype=np.int64).reshape(-1)

    def read_back(self) -> dict[str, np.ndarray]:
        return {
            b.name: self.read(_Loc(self.module[b.name], 0, b.type.size, b.type, b))
            for b in self.program.buffers
            if b.kind in (BufferKind.PLACEHOLDER, BufferKind.OWNED)
        }

    def run(self) -> None:
        self.arena.fill(self.terms.poison_f)
        self.owner.fill(-1)
        for index, instr in enumerate(self.program.instrs):
            if instr.opcode is Opcode.ALLOC:
                lo, hi = self.region(instr.name)
                self.arena[lo:hi] = self.terms.poison_f
                self.owner[lo:hi] = self.ids[instr.name]
            elif instr.opcode is Opcode.DEALLOC:
                lo, hi = self.region(instr.name)
                mine = self.owner[lo:hi] == self.ids[instr.name]
                self.arena[lo:hi][mine] = self.terms.poison_f
                self.owner[lo:hi][mine] = -1
            elif instr.opcode is Opcode.COPY:
                dest, source = (self.resolve(o) for o in instr.operands)
                self.poison(dest)
                self.commit([dest], [source], lambda: (self.read(source),))
            elif instr.opcode is Opcode.KERNEL:
                self.kernel(index, instr)

    def region(self, name: str) -> tuple[int, int]:
        lo = self.program.offset_of[name] // WORD
        return lo, lo + self.alloc_types[name].size

    def resolve(self, operand: Operand) -> _Loc:
        name, type_ = operand.name, None
        while name in self.views and name not in self.alloc_types:
            source, view_type = self.views[name]
            type_ = type_ or view_type
            name = source
        buffer = self.program.buffer_by_name.get(name)
        if buffer is not None:
            return _Loc(self.module[name], 0, buffer.type.size, type_ or buffer.type, buffer)
        lo, hi = self.region(name)
        return _Loc(self.arena, lo, hi, type_ or self.alloc_types[name], None)

    def read(self, loc: _Loc) -> np.ndarray:
        """The operand's terms, in its dtype's sort, shaped as its type."""
        words = loc.flat().copy()
        sort, sorts = sort_of(loc.type.dtype), self.terms.sorts
        if self.terms.all_of_sort(words, sort):
            return words.reshape(loc.type.shape)
        for i, t in enumerate(words):
            if sorts[t] is not sort:
                words[i] = self.terms.as_sort(int(t), sort)
        return words.reshape(loc.type.shape)

    def poison(self, loc: _Loc) -> None:
        loc.flat()[:] = self.terms.poison_f

    def commit(self, targets: list[_Loc], reads: list[_Loc], compute: Callable[[], tuple[np.ndarray, ...]]) -> None:
        """Write each target chunk by chunk, in order. ``compute()`` gives every
        target's value from memory as it is now; it is called again only when a
        chunk wrote memory it reads (else it would return the same terms)."""
        values: tuple[np.ndarray, ...] = ()
        stale = True
        for j, target in enumerate(targets):
            aliased = any(target.overlaps(r) for r in reads)
            flat = target.flat()
            for c, (lo, hi) in enumerate(chunks(target.type.size)):
                if stale or (aliased and c > 0):
                    values, stale = compute(), False
                flat[lo:hi] = values[j].reshape(-1)[lo:hi]
            stale = stale or aliased

    def static(self, index: int, instr: Instr) -> tuple:
        """``(n_out, n_in, inplace inputs per result, attributes)`` of the kernel
        at ``index``: functions of the instruction and the swap points (fixed for
        a machine's runs), made in its first run."""
        found = self.statics.get(index)
        if found is None:
            assert instr.op is not None
            spec = spec_of(instr.op)
            kinds = [o.kind for o in instr.operands]
            n_out, n_in = kinds.count(OperandKind.OUT), kinds.count(OperandKind.IN)
            inplace = tuple(tuple(spec.inplace_inputs(k)) for k in range(n_out))
            found = self.statics[index] = (n_out, n_in, inplace, {a.name: a.default for a in spec.attrs} | instr.attr_dict())
        return found

    def kernel(self, index: int, instr: Instr) -> None:
        n_out, n_in, inplace, attrs = self.static(index, instr)
        locs = [self.resolve(o) for o in instr.operands]
        outs, ins, state = locs[:n_out], locs[n_out : n_out + n_in], locs[n_out + n_in :]
        for k, out in enumerate(outs):
            if not any(i < len(ins) and ins[i].same_words(out) for i in inplace[k]):
                self.poison(out)

        def compute() -> tuple[np.ndarray, ...]:
            results, new_state = run_symbolic_kernel(
                self.ctx, instr.op, [self.read(x) for x in ins], [self.read(x) for x in state], attrs  # type: ignore[arg-type]
            )
            return results + new_state

        self.commit(outs + state, ins + state, compute)
