"""The IR interpreter (DESIGN §5): runs an allocated program on real memory,
under the sanitizer (``refcompiler.sanitizer``).

The execution contract, which is what makes aliasing bugs visible:

- memory is real: one ``uint8`` arena of ``peak_bytes`` and one byte buffer
  per module buffer; every operand is a numpy view of its bytes
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
from typing import Callable, Mapping

import numpy as np

from specs import Dtype

from refcompiler.errors import ExecutionError, UsageError
from refcompiler.execution_plan import plan_of
from refcompiler.execution_steps import CHUNKS, CopyStep, KernelStep, Loc, PoisonStep, chunk_bounds
from refcompiler.graph import Storage, StorageKind, initial_value
from refcompiler.ir import Buffer, BufferKind, Program
from refcompiler.ir_text import ir_violation
from refcompiler.kernels import prepared

__all__ = ["execute", "execute_runs", "POISON", "CHUNKS"]

POISON = 0xFF


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
    out = []
    for _ in range(runs):
        machine.run()
        out.append(machine.read_back())
    return out


class _Machine:
    """The memory of one ``execute_runs`` and the program's plan bound to it."""

    def __init__(self, program: Program):
        if program.peak_bytes is None:
            raise UsageError(f"program {program.name!r} is not allocated (run refcompiler.allocator.allocate first)")
        self.program = program
        self.arena = np.full(program.peak_bytes, POISON, dtype=np.uint8)
        self.module = {b.name: np.zeros(b.type.nbytes, dtype=np.uint8) for b in program.buffers}
        self.plan = plan_of(program)
        self.arrays: dict[int, np.ndarray] = {}  # id of a plan's Loc -> its view (the plan holds the Loc)
        self.steps = [self.bind(step) for step in self.plan.steps]

    # -- module memory ---------------------------------------------------------

    def load(self, values: Mapping[str, np.ndarray]) -> None:
        unknown = sorted(set(values) - {b.name for b in self.program.buffers if b.kind is not BufferKind.CONSTANT})
        if unknown:
            raise UsageError(f"values for {', '.join(unknown)}, which name no placeholder or owned buffer")
        for b in self.program.buffers:
            dtype = _dtype(b.type.dtype)
            if b.kind is not BufferKind.CONSTANT and b.name in values:
                value = np.asarray(values[b.name])
                if value.shape != b.type.shape or value.dtype != dtype:
                    raise UsageError(f"value for {b.name} is {value.dtype}{list(value.shape)}, the buffer is {b.type}")
            else:
                self.module[b.name][:] = np.frombuffer(self.initial_bytes(b), dtype=np.uint8)
                continue
            self.module[b.name][:] = np.ascontiguousarray(value, dtype=dtype).reshape(-1).view(np.uint8)

    def initial_bytes(self, b: Buffer) -> bytes:
        """The bytes of ``b``'s initial value, made once per plan (a function of the program)."""
        found = self.plan.initial.get(b.name)
        if found is None:
            storage = Storage(b.name, StorageKind(b.kind.value), b.type.dtype, b.type.shape, init=b.init, owner=b.owner)
            found = self.plan.initial[b.name] = _initial_bytes(storage)
        return found

    def read_back(self) -> dict[str, np.ndarray]:
        out = {}
        placeholder, owned = BufferKind.PLACEHOLDER, BufferKind.OWNED
        for b in self.program.buffers:
            if b.kind is placeholder or b.kind is owned:
                out[b.name] = np.ndarray(b.type.shape, _dtype(b.type.dtype), self.module[b.name]).copy()
        return out

    # -- one run ---------------------------------------------------------------

    def run(self) -> None:
        """One run: the plan's steps (poison and data), then its violation, if
        any. The sanitizer's checks ran when the plan was made (they do not
        depend on the data); an output is poisoned only where the kernel reads
        it (elsewhere the poison is overwritten before anything can read it).
        The kernels run under one ``np.errstate(all="ignore")`` for the run, as
        ``run_kernel`` runs each (nothing else a run does sets a flag)."""
        self.arena.fill(POISON)
        with np.errstate(all="ignore"):
            for step in self.steps:
                step()
        self.plan.raise_failure()

    def memory(self, loc: Loc) -> np.ndarray:
        """The bytes of ``loc``."""
        return (self.arena if loc.memory is None else self.module[loc.memory])[loc.lo : loc.hi]

    def array(self, loc: Loc) -> np.ndarray:
        """``loc``'s bytes seen as its type (one view per location of the plan,
        shared by the steps that use it: a step only writes through it)."""
        found = self.arrays.get(id(loc))
        if found is None:
            memory = self.arena if loc.memory is None else self.module[loc.memory]
            found = self.arrays[id(loc)] = np.ndarray(loc.type.shape, _dtype(loc.type.dtype), memory, loc.lo)
        return found

    def bind(self, step: PoisonStep | KernelStep | CopyStep) -> Callable[[], None]:
        if isinstance(step, PoisonStep):
            return _poison_run(self.arena, step)
        if isinstance(step, CopyStep):
            return _copy_run(self, step)
        return _kernel_run(self, step)

    def wrong_value(self, step: KernelStep, loc: Loc, value: np.ndarray) -> Exception:
        message = f"the instruction produces {value.dtype}{list(value.shape)} for {loc.origin}, which is {loc.type}"
        return ir_violation(self.program, step.index, "IR-1", message, loc.origin)


def _poison_run(arena: np.ndarray, step: PoisonStep) -> Callable[[], None]:
    region = arena[step.lo : step.hi]
    if step.owned is None:
        return lambda: region.fill(POISON)
    owned = step.owned

    def poison_owned() -> None:
        region[owned] = POISON

    return poison_owned


def _copy_run(machine: _Machine, step: CopyStep) -> Callable[[], None]:
    """A copy bound to memory. Overlapping, it is poisoned first and copied chunk
    by chunk, each chunk from the source as it is then."""
    dest, source = machine.array(step.dest), machine.array(step.source)
    if not step.overlap:

        def copy() -> None:
            dest[...] = source

        return copy
    flat_dest, flat_source = dest.reshape(-1), source.reshape(-1)
    poison, chunks = machine.memory(step.dest), chunk_bounds(step.dest.type.size)

    def copy_in_chunks() -> None:
        poison[:] = POISON
        for lo, hi in chunks:
            flat_dest[lo:hi] = flat_source[lo:hi].copy()

    return copy_in_chunks


def _kernel_run(machine: _Machine, step: KernelStep) -> Callable[[], None]:
    """A kernel bound to memory: its operands' views and its kernel made once."""
    compute = _compute(machine, step)
    targets = [(loc, machine.array(loc), aliased) for loc, aliased in step.targets]
    if step.poison or any(aliased for _, _, aliased in targets):
        return _chunked_run(machine, step, compute, targets)
    if not targets:  # nothing to commit: the kernel is not run (as for any kernel: only for a result)
        return lambda: None
    checked = [(j, loc, target, loc.type.shape, target.dtype) for j, (loc, target, _) in enumerate(targets)]

    def run() -> None:
        values = compute()
        for j, loc, target, shape, dtype in checked:
            value = values[j]
            if value.shape != shape or value.dtype != dtype:
                raise machine.wrong_value(step, loc, value)
            target[...] = value

    return run


def _chunked_run(
    machine: _Machine, step: KernelStep, compute: Callable[[], tuple[np.ndarray, ...]], targets: list[tuple[Loc, np.ndarray, bool]]
) -> Callable[[], None]:
    """A kernel whose results are committed chunk by chunk where they overlap
    what it reads; each chunk keeps its slice of the whole kernel on memory as
    it is then. The kernels are pure, so the value is computed again only
    after a chunk wrote over bytes the kernel reads (a target that overlaps
    them): until then, the last value is what the kernel would give, and the
    chunks of a target that overlaps nothing read are written at once."""
    poison = [machine.memory(loc) for loc in step.poison]
    flats = [(loc, target.reshape(-1), chunk_bounds(loc.type.size) if aliased else None) for loc, target, aliased in targets]

    def checked(loc: Loc, flat: np.ndarray, value: np.ndarray) -> np.ndarray:
        """``value``'s elements; IR-1 unless it has ``loc``'s type."""
        if value.shape != loc.type.shape or value.dtype != flat.dtype:
            raise machine.wrong_value(step, loc, value)
        return value.reshape(-1)

    def run() -> None:
        for p in poison:
            p[:] = POISON
        values = None
        for j, (loc, flat, chunks) in enumerate(flats):
            if chunks is None:
                if values is None:
                    values = compute()
                flat[:] = checked(loc, flat, values[j])
                continue
            for lo, hi in chunks:
                if values is None:
                    values = compute()
                flat[lo:hi] = checked(loc, flat, values[j])[lo:hi]
                values = None

    return run


def _compute(machine: _Machine, step: KernelStep) -> Callable[[], tuple[np.ndarray, ...]]:
    """The op's kernel (``kernels.prepared``) on the step's operands as memory
    is then (results, then new state); a run-time error names the node."""
    ins = [machine.array(loc) for loc in step.ins]
    state = [machine.array(loc) for loc in step.state]
    op, attrs = step.instr.op, step.attrs
    kernel = prepared(op, attrs)  # type: ignore[arg-type]  # a kernel has an op

    def compute() -> tuple[np.ndarray, ...]:
        try:
            return kernel(ins, state)
        except ExecutionError as e:
            name = op.value if op is not None else "?"
            raise ExecutionError(f"node '{step.instr.name}' ({name}): {e}", node=step.instr.name) from None

    return compute


_DTYPES = {d: np.dtype(d.value) for d in Dtype}


def _dtype(dtype: Dtype) -> np.dtype:
    found = _DTYPES.get(dtype)
    return found if found is not None else np.dtype(dtype.value)


@lru_cache(maxsize=1024)
def _initial_bytes_cached(storage: Storage) -> bytes:
    return _value_bytes(storage)


def _value_bytes(storage: Storage) -> bytes:
    return np.ascontiguousarray(initial_value(storage)).reshape(-1).view(np.uint8).tobytes()


def _initial_bytes(storage: Storage) -> bytes:
    """The bytes of ``initial_value(storage)``. A seeded or zero value is
    remembered by its storage (a function of its fields: the programs of one
    graph share it); an explicit one only by its program's plan (its floats
    compare by value: ``0.0 == -0.0`` would share a key while their bits differ)."""
    if storage.init is not None and storage.init.value is not None:
        return _value_bytes(storage)
    return _initial_bytes_cached(storage)
