"""The IR interpreter (DESIGN §5): runs an allocated program on real memory,
under the sanitizer (``refcompiler.sanitizer``).

The execution contract, which is what makes aliasing bugs visible:

- memory is real: one ``uint8`` arena of ``peak_bytes`` and one byte buffer
  per module buffer (disjoint parts of one allocation); every operand is a numpy view of its bytes
  (its dtype and shape over those bytes), so views and shared buffers alias;
- ``alloc`` fills its region with poison (``0xFF`` bytes: a NaN as float32,
  -1 as int32); ``dealloc`` poisons the bytes its activation still owns (a
  read of either before a write is a violation too: the poison is what such
  a read would see were the sanitizer wrong);
- before a data instruction runs, each ``@out`` is poisoned unless it is in a
  declared in-place pair (``spec_of(op).inplace_inputs(k)``) with an input it
  aliases exactly; a ``copy`` is never in place. (Only an ``@out`` over bytes
  the instruction reads is written with poison: elsewhere the poison would be
  overwritten before anything could read it.)
- results are produced one after another in operand order (the ``@out``
  results, then the ``@inout`` state); each is committed in chunks of its
  flat (row-major) element range, in index order, at least two when it has two
  or more elements. Each chunk runs the whole-tensor kernel
  (``refcompiler.kernels.prepared``, the reference's kernels) on the operands as they are in memory
  at that moment and keeps that chunk's slice; a ``copy`` copies chunk by
  chunk the same way. So an elementwise op in place stays exact, while a
  stencil, a transpose, or a result over an input a later result still reads
  goes wrong, as a real kernel would. (The kernels are pure, so a value is
  computed again only after a chunk overwrote bytes it reads; until then the
  last value is what the kernel would give.)

Module buffers start from their values (constants from their ``init``); a
second run starts from the first run's placeholders and owned state, with a
fresh arena. The sanitizer reports the first bad access as an
``InvariantViolation`` (its checks do not depend on the data: they run once
per program, ``refcompiler.execution_plan``, and every run raises the
violation where its checks would have found it); a kernel's run-time error
(an embedding id out of range) is an ``ExecutionError`` naming the node.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Mapping

import numpy as np

from specs import Dtype, OpKind

from refcompiler import memos
from refcompiler.errors import ExecutionError, UsageError
from refcompiler.execution_plan import plan_of
from refcompiler.execution_steps import CHUNKS, CopyStep, KernelStep, Loc, PoisonStep, chunk_bounds
from refcompiler.graph import Storage, StorageKind, initial_value
from refcompiler.ir import Buffer, BufferKind, Program
from refcompiler.ir_text import ir_violation
from refcompiler.kernels import KERNELS, Kernel, Prepared, prepared

__all__ = ["execute", "execute_runs", "POISON", "CHUNKS"]

POISON = 0xFF
MODULE_ALIGN = 64  # where each module buffer starts in a machine's block: a multiple of this


def execute(program: Program, values: Mapping[str, np.ndarray], *, runs: int = 1) -> dict[str, np.ndarray]:
    """Run the allocated ``program`` ``runs`` times; return every placeholder and
    owned buffer after the last run (fresh arrays).

    ``values`` gives placeholders and owned buffers their starting values; one
    not given starts from its ``init``. Raises ``InvariantViolation`` from the
    sanitizer, ``ExecutionError`` for a run-time error, ``UsageError`` for a
    program without arena offsets or a value that does not fit its buffer.
    """
    return execute_runs(program, values, runs=runs)[-1]


def execute_runs(program: Program, values: Mapping[str, np.ndarray], *, runs: int = 1) -> list[dict[str, np.ndarray]]:
    """``execute`` with the values after each of the ``runs`` runs: element
    ``k`` is what ``execute(program, values, runs=k + 1)`` returns (the machine
    is deterministic and a run starts only from the module buffers), at the
    cost of ``runs`` runs instead of ``runs * (runs + 1) / 2``."""
    machine = _Machine(program)
    machine.load(values)
    return machine.run_each(runs)


class _Machine:
    """The memory of one ``execute_runs``: one block of bytes (``block``;
    ``bytes``, a memoryview of it, for the poison) holding the arena (``arena``,
    its first ``peak_bytes``) and then each module buffer (from ``base``, at its
    layout's ``starts``; ``buffers``: a view of each as its type), and a view of
    every location of the program's plan over it (``views``, by the location's
    ``slot``: a module buffer's own view when the location is the buffer as its
    type); each kernel step's kernel and the views of its inputs and of its
    state (``kernels``, by the step's index: read only, as the kernels are
    pure); a run walks the plan's steps over those views."""

    def __init__(self, program: Program):
        program.arena_bytes()  # allocated, and within the limits
        self.program = program
        self.layout = layout = _layout_of(program.buffers)
        self.plan = plan = plan_of(program)
        # a run fills the arena with poison first and loading writes every
        # module buffer: nothing reads the block's bytes before they are set
        self.base = base = -(-program.peak_bytes // MODULE_ALIGN) * MODULE_ALIGN
        self.block = block = np.empty(base + layout.nbytes, dtype=np.uint8)
        self.bytes = memoryview(block)  # a slice of it is written far more cheaply than one of ``block``
        self.fill = _poison_fill(len(block))  # poison bytes, as many as the block: its slices are written
        self.arena = block[: program.peak_bytes]
        starts = layout.starts
        self.buffers = {b.name: np.ndarray(shape, dtype, block, base + starts[b.name]) for b, shape, dtype in layout.typed}
        self.views = views = []
        for loc in plan.locs:
            if loc.memory is not None and loc.type is loc.buffer.type:  # type: ignore[union-attr]  # a module buffer's
                views.append(self.buffers[loc.memory])
            else:
                views.append(np.ndarray(loc.type.shape, _DTYPES[loc.type.dtype], block, self.start(loc)))
        self.kernels = {
            # a kernel step's instruction has an op
            step.index: (_prepared(step.instr.op, step.attrs), [views[i.slot] for i in step.ins], [views[s.slot] for s in step.state])  # type: ignore[arg-type]
            for step in plan.steps
            if type(step) is KernelStep
        }

    def start(self, loc: Loc) -> int:
        """Where ``loc``'s bytes start in the block."""
        return loc.lo if loc.memory is None else self.base + self.layout.starts[loc.memory] + loc.lo

    # -- module memory ---------------------------------------------------------

    def load(self, values: Mapping[str, np.ndarray]) -> None:
        layout = self.layout
        if not values.keys() <= layout.settable:
            unknown = sorted(set(values) - layout.settable)
            raise UsageError(f"values for {', '.join(unknown)}, which name no placeholder or owned buffer")
        memory, buffers, base, starts = self.bytes, self.buffers, self.base, layout.starts
        for b, shape, dtype in layout.typed:
            if b.name in values and b.kind is not _CONSTANT:
                value = np.asarray(values[b.name])
                if value.shape != shape or value.dtype != dtype:
                    raise UsageError(f"value for {b.name} is {value.dtype}{list(value.shape)}, the buffer is {b.type}")
                buffers[b.name][...] = value  # the same dtype: the bits as they are
            else:
                start = base + starts[b.name]
                memory[start : start + b.type.nbytes] = layout.initial_bytes(b)

    def read_back(self) -> dict[str, np.ndarray]:
        buffers = self.buffers
        return {name: buffers[name].copy() for name in self.layout.kept}

    # -- runs ------------------------------------------------------------------

    def run_each(self, runs: int) -> list[dict[str, np.ndarray]]:
        """``runs`` runs, each followed by ``read_back``; the kernels under one
        ``np.errstate(all="ignore")`` for them all, as ``run`` enters it for one."""
        out = []
        with np.errstate(all="ignore"):
            for _ in range(runs):
                self.steps()
                out.append(self.read_back())
        return out

    def run(self) -> None:
        """One run (``steps``), its kernels under one ``np.errstate(all="ignore")``,
        as ``run_kernel`` runs each (nothing else a run does sets a flag)."""
        with np.errstate(all="ignore"):
            self.steps()

    def steps(self) -> None:
        """The plan's steps (poison and data), then its violation, if any. The
        sanitizer's checks ran when the plan was made (they do not depend on the
        data); an output is poisoned only where the kernel reads it (elsewhere
        the poison is overwritten before anything can read it). The caller
        enters ``np.errstate(all="ignore")``."""
        arena, memory, fill, views = self.arena, self.bytes, self.fill, self.views
        arena.fill(POISON)
        for step in self.plan.steps:
            kind = type(step)
            if kind is PoisonStep:
                if step.owned is None:
                    memory[step.lo : step.hi] = fill[: step.hi - step.lo]
                else:
                    arena[step.lo : step.hi][step.owned] = POISON
            elif kind is KernelStep:
                if step.chunked:
                    self.kernel_in_chunks(step)
                elif step.targets:  # nothing to commit: the kernel is not run (as for any kernel: only for a result)
                    self.kernel(step)
            elif step.overlap:
                self.copy_in_chunks(step)
            else:
                views[step.dest.slot][...] = views[step.source.slot]
        self.plan.raise_failure()

    def poison(self, loc: Loc) -> None:
        """Fill the bytes of ``loc`` with poison."""
        start = self.start(loc)
        self.bytes[start : start + loc.hi - loc.lo] = self.fill[: loc.hi - loc.lo]

    def copy_in_chunks(self, step: CopyStep) -> None:
        """An overlapping copy: ``dest`` poisoned first, then copied chunk by
        chunk, each chunk from the source as it is then."""
        dest, source = self.views[step.dest.slot].ravel(), self.views[step.source.slot].ravel()  # views: contiguous
        self.poison(step.dest)
        for lo, hi in chunk_bounds(step.dest.type.size):
            dest[lo:hi] = source[lo:hi].copy()

    def compute(self, step: KernelStep) -> tuple[np.ndarray, ...]:
        """The op's kernel (``kernels.prepared``) on the step's operands (views:
        memory as it is when it runs), results then new state; a run-time
        error names the node."""
        kernel, ins, state = self.kernels[step.index]
        try:
            return kernel(ins, state)
        except ExecutionError as e:
            raise _named(step, e) from None

    def kernel(self, step: KernelStep) -> None:
        """A kernel whose results overlap nothing it reads: computed once
        (``compute``, inline), each result committed whole."""
        kernel, ins, state = self.kernels[step.index]
        try:
            values = kernel(ins, state)
        except ExecutionError as e:
            raise _named(step, e) from None
        views = self.views
        for j, (loc, _) in enumerate(step.targets):
            value, target = values[j], views[loc.slot]
            if value.shape != loc.type.shape or value.dtype != target.dtype:
                raise self.wrong_value(step, loc, value)
            target[...] = value

    def kernel_in_chunks(self, step: KernelStep) -> None:
        """A kernel whose results are committed chunk by chunk where they overlap
        what it reads; each chunk keeps its slice of the whole kernel on memory as
        it is then. The kernels are pure, so the value is computed again only
        after a chunk wrote over bytes the kernel reads (a target that overlaps
        them): until then, the last value is what the kernel would give, and the
        chunks of a target that overlaps nothing read are written at once."""
        for loc in step.poison:
            self.poison(loc)
        views = self.views
        values = None
        for j, (loc, aliased) in enumerate(step.targets):
            flat = views[loc.slot].ravel()  # a view: views are contiguous
            if not aliased:
                if values is None:
                    values = self.compute(step)
                flat[:] = self.checked(step, loc, flat, values[j])
                continue
            for lo, hi in chunk_bounds(loc.type.size):
                if values is None:
                    values = self.compute(step)
                flat[lo:hi] = self.checked(step, loc, flat, values[j])[lo:hi]
                values = None

    def checked(self, step: KernelStep, loc: Loc, flat: np.ndarray, value: np.ndarray) -> np.ndarray:
        """``value``'s elements; IR-1 unless it has ``loc``'s type."""
        if value.shape != loc.type.shape or value.dtype != flat.dtype:
            raise self.wrong_value(step, loc, value)
        return value.ravel()  # ``reshape(-1)``: a view when ``value`` is contiguous, else a copy

    def wrong_value(self, step: KernelStep, loc: Loc, value: np.ndarray) -> Exception:
        message = f"the instruction produces {value.dtype}{list(value.shape)} for {loc.origin}, which is {loc.type}"
        return ir_violation(self.program, step.index, "IR-1", message, loc.origin)


_CONSTANT = BufferKind.CONSTANT
_POISON_FILL = memoryview(bytes([POISON]) * 4096)


# The most poison bytes kept for every machine to share (``_poison_fill``): a
# larger block gets its own, freed with it, so that one large program run once
# does not hold as much memory again for the rest of the process.
POISON_FILL_KEPT = 1 << 20


def _poison_fill(n: int) -> memoryview:
    """At least ``n`` poison bytes (a read-only view; shared up to ``POISON_FILL_KEPT``)."""
    global _POISON_FILL
    fill = _POISON_FILL
    if len(fill) < n:
        fill = memoryview(bytes([POISON]) * n)
        if n <= POISON_FILL_KEPT:
            _POISON_FILL = fill
    return fill


def _named(step: KernelStep, e: ExecutionError) -> ExecutionError:
    """The run-time error ``e`` of ``step``'s kernel, naming its node."""
    op = step.instr.op
    name = op.value if op is not None else "?"
    return ExecutionError(f"node '{step.instr.name}' ({name}): {e}", node=step.instr.name)


class _Layout:
    """What loading and reading back take from a program's module buffers
    alone (``program.buffers``, a tuple the programs of one graph share):
    kept per tuple object (``_layout_of``)."""

    def __init__(self, buffers: tuple[Buffer, ...]):
        self.buffers = buffers
        self.starts: dict[str, int] = {}  # buffer -> where its bytes start, after the arena's
        end = 0
        for b in buffers:
            self.starts[b.name] = end
            end += -(-b.type.nbytes // MODULE_ALIGN) * MODULE_ALIGN
        self.nbytes = end  # the module buffers' bytes, with the gaps that align them
        self.settable = {b.name for b in buffers if b.kind is not BufferKind.CONSTANT}
        self.typed = [(b, b.type.shape, _DTYPES[b.type.dtype]) for b in buffers]
        self.kept = [b.name for b in buffers if b.kind is BufferKind.PLACEHOLDER or b.kind is BufferKind.OWNED]
        self.initial: dict[str, bytes] = {}  # buffer -> the bytes of its initial value (made on first use)

    def initial_bytes(self, b: Buffer) -> bytes:
        """The bytes of ``b``'s initial value (a function of the buffer)."""
        found = self.initial.get(b.name)
        if found is None:
            storage = Storage(b.name, StorageKind(b.kind.value), b.type.dtype, b.type.shape, init=b.init, owner=b.owner)
            found = self.initial[b.name] = _initial_bytes(storage)
        return found


LAYOUTS_KEPT = 64
_LAYOUTS: dict[int, _Layout] = memos.kept({})  # id of a buffers tuple -> its layout (which holds it: the id is not reused)


def _layout_of(buffers: tuple[Buffer, ...]) -> _Layout:
    found = _LAYOUTS.get(id(buffers))
    if found is not None and found.buffers is buffers:
        return found
    if len(_LAYOUTS) >= LAYOUTS_KEPT:
        _LAYOUTS.clear()
    found = _LAYOUTS[id(buffers)] = _Layout(buffers)
    return found


PREPARED_KEPT = 1024
# id of a kernel step's attributes -> (them, the op, its kernel in ``KERNELS``,
# ``prepared(op, them)``): the attributes are the read-only mapping
# ``kernel_facts`` keeps per instruction, which the programs sharing the
# instruction share; bounded (cleared when full)
_PREPARED: dict[int, tuple[Mapping[str, object], OpKind, Kernel, Prepared]] = memos.kept({})


def _prepared(op: OpKind, attrs: Mapping[str, object]) -> Prepared:
    """``kernels.prepared(op, attrs)`` (a function of the op's kernel and the
    attributes alone), kept by the identity of ``attrs``."""
    found = _PREPARED.get(id(attrs))
    if found is not None and found[0] is attrs and found[1] is op and found[2] is KERNELS[op]:
        return found[3]
    if len(_PREPARED) >= PREPARED_KEPT:
        _PREPARED.clear()
    fn = prepared(op, attrs)
    _PREPARED[id(attrs)] = (attrs, op, KERNELS[op], fn)
    return fn


class _Dtypes(dict):
    """The numpy dtype of each ``Dtype`` (of another value, ``np.dtype(its value)``)."""

    def __missing__(self, dtype: Dtype) -> np.dtype:
        return np.dtype(dtype.value)


_DTYPES = _Dtypes({d: np.dtype(d.value) for d in Dtype})


@lru_cache(maxsize=1024)
def _initial_bytes_cached(storage: Storage) -> bytes:
    return _value_bytes(storage)


memos.on_forget(_initial_bytes_cached.cache_clear)


def _value_bytes(storage: Storage) -> bytes:
    return np.ascontiguousarray(initial_value(storage)).reshape(-1).view(np.uint8).tobytes()


def _initial_bytes(storage: Storage) -> bytes:
    """The bytes of ``initial_value(storage)``. A seeded or zero value is
    remembered by its storage (a function of its fields: the programs of one
    graph share it); an explicit one only by its buffers' layout, per tuple
    object (its floats compare by value: ``0.0 == -0.0`` would share a key
    while their bits differ)."""
    if storage.init is not None and storage.init.value is not None:
        return _value_bytes(storage)
    return _initial_bytes_cached(storage)
