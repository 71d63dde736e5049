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

Each program is planned once (``Step``: operands resolved, the poisoning
and aliasing decided) and run from the plan. A step's values (a copy's
source, a kernel's results and new state) are a pure function of the words
it reads, its op, attributes and the shape and sort each operand is read in;
they are remembered per term table under that key and the swap points
installed, so the many programs of one graph (and their second run) mostly
find them. The key holds the words as they are when the chunk computes, so
an in-place chunk that reads what an earlier chunk wrote is another step.

The access rules of the sanitizer (IR-1..IR-5) are not re-checked here: the
IR verifier has checked the program statically, and the concrete run that
confirms a counterexample runs under the sanitizer.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from specs import TensorType

from refcompiler.errors import UsageError
from refcompiler.ir import Instr, Opcode, Operand, Program
from refcompiler.ir_text import ir_violation
from refcompiler.kernel_facts import kernel_facts
from refcompiler.symbolic.kernels import MEMO_SIZE, Context, run_symbolic_kernel
from refcompiler.symbolic.steps import Loc, Step, form, load_words, module_layout, release, sort_of
from refcompiler.variants import active

__all__ = ["SymbolicMachine", "sort_of"]

WORD = 4
_ALLOC, _DEALLOC, _COPY, _KERNEL, _VIEW = Opcode.ALLOC, Opcode.DEALLOC, Opcode.COPY, Opcode.KERNEL, Opcode.VIEW  # globals: cheaper than the enum's


class SymbolicMachine:
    """Runs an allocated program on terms. ``load`` the module buffers' starting
    terms (constants included), ``run`` as often as wanted, ``read_back``.

    ``memory`` holds every word: the module buffers' (``words``, laid out by
    ``layout``), then the arena's (``arena``, from word ``base``)."""

    def __init__(self, program: Program, ctx: Context):
        program.arena_bytes()  # allocated, and within the limits
        if program.peak_bytes % WORD or any(off % WORD for _, off in program.offsets):
            raise UsageError(f"program {program.name!r} has arena offsets that are not whole words")
        self.program, self.ctx, self.terms = program, ctx, ctx.terms
        self.layout = layout = module_layout(program.buffers)
        self.base = base = layout.size
        self.memory = memory = np.empty(base + program.peak_bytes // WORD, dtype=np.int64)  # empty, then fill: np.full costs more
        memory.fill(self.terms.poison_f)
        self.words, self.arena = memory[:base], memory[base:]
        self.outputs, self.sort_codes, self.buffers = layout.outputs, layout.sort_codes, layout.by_name
        self.alloc_types: dict[str, TensorType] = {}
        self.views: dict[str, tuple[str, TensorType]] = {}
        for instr in program.instrs:
            if instr.opcode is _ALLOC and instr.type is not None:
                self.alloc_types.setdefault(instr.name, instr.type)
            elif instr.opcode is _VIEW and instr.type is not None and len(instr.operands) == 1:
                self.views.setdefault(instr.name, (instr.operands[0].name, instr.type))
        self.locs: dict[str, Loc] = {}  # ``resolve``'s, by operand name
        self.steps: list[Step] | None = None  # made in the first run (under the swap points then installed)

    def load(self, values: Mapping[str, np.ndarray]) -> None:
        """Set the module buffers named in ``values`` to their terms (other names are no buffer of it)."""
        load_words(self.words, self.layout, values)

    def load_words(self, words: np.ndarray) -> None:
        """Set every module word at once: ``words`` in ``layout`` order (``layout.size`` of them)."""
        self.words[:] = words

    def output_bytes(self) -> bytes:
        """The words ``read_back`` reads, as they are (not cast), in its order
        (``layout.outputs``), as the bytes of one ``int64`` array."""
        return self.words[self.layout.output_words].tobytes()

    def read_back(self) -> dict[str, np.ndarray]:
        """The placeholders' and owned variables' terms (``read``), checked in
        one go: when every module word is of its buffer's sort, nothing is cast."""
        words = self.words.copy()
        if self.terms.sort_codes(words).tobytes() == self.sort_codes:  # bytes: cheaper than a numpy reduction
            return {name: words[lo:hi].reshape(type_.shape) for name, lo, hi, type_ in self.outputs}
        return {name: self.read(words[lo:hi], type_) for name, lo, hi, type_ in self.outputs}

    def run(self) -> None:
        if self.steps is None:
            self.steps = self.plan()
        poison, memo, guards = self.terms.poison_f, self.terms.step_memo, self.ctx.guards
        self.arena.fill(poison)
        for step in self.steps:
            for words in step.poisoned:
                words.fill(poison)
            if step.chunked is not None:
                self.commit(step)
                continue
            # ``commit``'s first case and ``compute``'s lookup, inlined: the common case, a step found
            key = (step.key, *map(_bytes, step.reads))
            found = memo.get(key)
            if found is None:
                values = self.computed(step, key)
            else:
                values = found[0]
                if found[1]:
                    guards.extend(found[1])
            for flat, value in zip(step.targets, values):
                flat[:] = value

    def plan(self) -> list[Step]:
        """The copies' and kernels' ``Step``s, each poisoning first what the
        allocs and deallocs before it poison. Which words those are depends on
        the instructions alone: an alloc its region, a dealloc the words its
        activation still owns (a later alloc over them took them), found here
        once with an owner per word. The arena's words are not read back, so
        the poison after the last copy or kernel is not written."""
        table = active()
        swaps = tuple(sorted(table.items()))  # a result found under other swap points is never reused
        owner: list = [-1] * self.arena.size  # the name of the alloc that owns each arena word (-1: none); a list: small numpy operations cost more
        steps: list[Step] = []
        pending: list[tuple[int, int]] = []  # word ranges of memory to poison before the next step
        base, offset_of, alloc_types = self.base, self.program.offset_of, self.alloc_types
        for instr in self.program.instrs:
            opcode = instr.opcode
            if opcode is _ALLOC:
                name = instr.name
                lo = offset_of[name] // WORD  # ``region``, inlined
                hi = lo + alloc_types[name].size
                owner[lo:hi] = [name] * (hi - lo)
                pending.append((base + lo, base + hi))
            elif opcode is _DEALLOC:
                lo, hi = self.region(instr.name)
                pending.extend([(base + a, base + b) for a, b in release(owner, lo, hi, instr.name)])
            elif opcode is _COPY:
                steps.append(self.copy_step(instr, swaps, pending))
                pending = []
            elif opcode is _KERNEL:
                steps.append(self.kernel_step(instr, table, swaps, pending))
                pending = []
        return steps

    def copy_step(self, instr: Instr, swaps: tuple, pending: list[tuple[int, int]]) -> Step:
        """A copy's ``Step``: ``pending`` poisoned, then its ``@out``."""
        dest, source = (self.resolve(o) for o in instr.operands)
        pending.append((dest.lo, dest.hi))
        key = self.terms.intern_key((swaps, _COPY, source.form))
        return Step(instr, self.memory, pending, [dest], [dest.overlaps(source)], [source], 1, None, key)

    def kernel_step(self, instr: Instr, table: Mapping, swaps: tuple, pending: list[tuple[int, int]]) -> Step:
        """A kernel's ``Step``: ``pending`` poisoned, then each ``@out`` unless
        it is in a declared in-place pair with an input it aliases exactly.
        ``table``: the swap points installed (``active()``); ``swaps``: them sorted."""
        facts = kernel_facts(instr, table)
        if isinstance(facts, str):  # a program the IR verifier would reject
            raise ir_violation(self.program, self.program.instrs.index(instr), "IR-1", facts, instr.name)
        n_out, n_in, attrs, inplace, attrs_repr = facts
        known = self.locs
        locs = [known.get(o.name) or self.resolve(o) for o in instr.operands]
        outs, ins, state = locs[:n_out], locs[n_out : n_out + n_in], locs[n_out + n_in :]
        for k, out in enumerate(outs):
            if not _in_place(out, ins, inplace[k]):
                pending.append((out.lo, out.hi))
        targets, reads = outs + state, ins + state
        aliased = [_overlaps_any(t, reads) for t in targets]
        key = self.terms.intern_key((swaps, instr.op, n_in, attrs_repr, tuple([r.form for r in reads])))
        return Step(instr, self.memory, pending, targets, aliased, reads, n_in, attrs, key)

    def region(self, name: str) -> tuple[int, int]:
        """The arena words (from the arena's first) of the activation ``name``."""
        lo = self.program.offset_of[name] // WORD
        return lo, lo + self.alloc_types[name].size

    def resolve(self, operand: Operand) -> Loc:
        found = self.locs.get(operand.name)
        if found is None:
            found = self.locs[operand.name] = self._resolve(operand.name)
        return found

    def _resolve(self, name: str) -> Loc:
        type_ = None
        while name in self.views and name not in self.alloc_types:
            source, view_type = self.views[name]
            type_ = type_ or view_type
            name = source
        buffer = self.buffers.get(name)
        if buffer is not None:
            lo, hi = self.layout.spans[name]
            return Loc(self.memory, lo, hi, type_ or buffer.type)
        lo, hi = self.region(name)
        return Loc(self.memory, self.base + lo, self.base + hi, type_ or self.alloc_types[name])

    def read(self, flat: np.ndarray, type_: TensorType) -> np.ndarray:
        """The words ``flat`` as terms of ``type_``'s dtype's sort, shaped as ``type_``."""
        words = flat.copy()
        sort, terms = sort_of(type_.dtype), self.terms
        if terms.all_of_sort(words, sort):
            return words.reshape(type_.shape)
        sorts = terms.sorts
        for i, t in enumerate(words):
            if sorts[t] is not sort:
                words[i] = terms.as_sort(int(t), sort)
        return words.reshape(type_.shape)

    def commit(self, step: Step) -> None:
        """Write each target chunk by chunk, in order, each chunk from
        ``compute`` on memory as it is then; computed again only when a chunk
        wrote memory it reads (else it would give the same terms)."""
        if step.chunked is None:  # no target overlaps a read: every chunk from the same values
            for flat, value in zip(step.targets, self.compute(step)):
                flat[:] = value
            return
        values: tuple[np.ndarray, ...] | None = None
        for j, flat in enumerate(step.targets):
            if not step.aliased[j]:  # every chunk from the same values: one write
                values = values if values is not None else self.compute(step)
                flat[:] = values[j]
                continue
            for c, (lo, hi) in enumerate(step.chunked[j]):
                if values is None or c > 0:
                    values = self.compute(step)
                flat[lo:hi] = values[j][lo:hi]
            values = None

    def compute(self, step: Step) -> tuple[np.ndarray, ...]:
        """Every target's flat value from memory as it is now: a copy's source, a
        kernel's results then new state. Remembered per term table by the words
        read and ``step.key`` (all it is a function of); the guards it adds are
        replayed when found."""
        key = (step.key, *map(_bytes, step.reads))
        found = self.terms.step_memo.get(key)
        if found is not None:
            if found[1]:
                self.ctx.guards.extend(found[1])
            return found[0]
        return self.computed(step, key)

    def computed(self, step: Step, key: tuple) -> tuple[np.ndarray, ...]:
        """``compute`` of a step not found under ``key``: computed and remembered."""
        memo, guards = self.terms.step_memo, self.ctx.guards
        before = len(guards)
        values = [self.read(r, t) for r, t in zip(step.reads, step.read_types, strict=True)]
        if step.opcode is _COPY:
            out = (values[0],)
        else:
            ins, state = values[: step.n_in], values[step.n_in :]
            results, new_state = run_symbolic_kernel(self.ctx, step.instr.op, ins, state, step.attrs)  # type: ignore[arg-type]
            out = results + new_state
        flat = tuple(np.asarray(v, dtype=np.int64).reshape(-1) for v in out)  # fresh (``run_symbolic_kernel``'s, ``read``'s): not copied again
        for v in flat:
            v.flags.writeable = False  # shared by every step that finds it
        if len(memo) >= MEMO_SIZE:
            memo.clear()
        memo[key] = found = (flat, tuple(guards[before:]))
        return found[0]


def _in_place(out: Loc, ins: list[Loc], pairs: tuple[int, ...]) -> bool:
    """Whether ``out`` is in a declared in-place pair (its input positions
    ``pairs``) with an input it aliases exactly (its @out is then not poisoned)."""
    for i in pairs:
        if i < len(ins) and ins[i].same_words(out):
            return True
    return False


def _overlaps_any(target: Loc, reads: list[Loc]) -> bool:
    for r in reads:
        if target.lo < r.hi and r.lo < target.hi:  # ``Loc.overlaps``, inlined: asked per target and read of every kernel
            return True
    return False


_bytes = np.ndarray.tobytes
