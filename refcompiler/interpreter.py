"""The IR interpreter (DESIGN §5): runs an allocated program on real memory,
under the sanitizer (``refcompiler.sanitizer``).

The execution contract, which is what makes aliasing bugs visible:

- memory is real: one ``uint8`` arena of ``peak_bytes`` and one byte buffer
  per module buffer; every operand is a numpy view of its bytes
  (``.view(dtype).reshape(shape)``), so views and shared buffers alias;
- ``alloc`` fills its region with poison (``0xFF`` bytes: a NaN as float32,
  -1 as int32); ``dealloc`` poisons the bytes its activation still owns;
- before a data instruction runs, each ``@out`` is poisoned unless it is in a
  declared in-place pair (``spec_of(op).inplace_inputs(k)``) with an input it
  aliases exactly; a ``copy`` is never in place;
- results are produced one after another in operand order (the ``@out``
  results, then the ``@inout`` state); each is committed in chunks of its
  flat (row-major) element range, in index order, at least two when it has two
  or more elements. Each chunk runs the whole-tensor kernel
  (``refcompiler.kernels.run_kernel``) on the operands as they are in memory
  at that moment and keeps that chunk's slice; a ``copy`` copies chunk by
  chunk the same way. So an elementwise op in place stays exact, while a
  stencil, a transpose, or a result over an input a later result still reads
  goes wrong, as a real kernel would. (The kernels are pure, so a value is
  computed again only after a chunk overwrote bytes it reads; until then the
  last value is what the kernel would give: ``_Cached``.)

Module buffers start from their values (constants from their ``init``); a
second run starts from the first run's placeholders and owned state, with a
fresh arena. The sanitizer reports the first bad access as an
``InvariantViolation``; a kernel's run-time error (an embedding id out of
range) is an ``ExecutionError`` naming the node.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Mapping

import numpy as np

from specs import TensorType

from refcompiler.errors import ExecutionError, UsageError
from refcompiler.graph import Storage, StorageKind, initial_value
from refcompiler.ir import Buffer, BufferKind, Instr, Opcode, Operand, OperandKind, Program, signature_problem
from refcompiler.ir_text import ir_violation
from refcompiler.kernels import run_kernel
from refcompiler.sanitizer import Shadow
from refcompiler.spec import spec_of

__all__ = ["execute", "execute_runs", "POISON", "CHUNKS"]

POISON = 0xFF
CHUNKS = 3  # chunks per result (fewer when it has fewer elements)


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


@dataclass(frozen=True)
class _Loc:
    """Where an operand's bytes are: ``memory[lo:hi]`` seen as ``type``.

    ``origin`` is the activation or module buffer behind the name; ``buffer``
    is that module buffer, ``None`` for the arena."""

    origin: str
    memory: np.ndarray
    lo: int
    hi: int
    type: TensorType
    buffer: Buffer | None

    def array(self) -> np.ndarray:
        return self.memory[self.lo : self.hi].view(np.dtype(self.type.dtype.value)).reshape(self.type.shape)

    def flat(self) -> np.ndarray:
        return self.memory[self.lo : self.hi].view(np.dtype(self.type.dtype.value))

    def same_bytes(self, other: "_Loc") -> bool:
        return self.memory is other.memory and self.lo == other.lo and self.hi == other.hi

    def overlaps(self, other: "_Loc") -> bool:
        return self.memory is other.memory and self.lo < other.hi and other.lo < self.hi

    @property
    def size(self) -> int:
        return self.type.size


class _Machine:
    def __init__(self, program: Program):
        if program.peak_bytes is None:
            raise UsageError(f"program {program.name!r} is not allocated (run refcompiler.allocator.allocate first)")
        self.program = program
        self.arena = np.full(program.peak_bytes, POISON, dtype=np.uint8)
        self.module = {b.name: np.zeros(b.type.nbytes, dtype=np.uint8) for b in program.buffers}
        self.offsets = program.offset_of
        self.alloc_types: dict[str, TensorType] = {}
        self.views: dict[str, tuple[str, TensorType]] = {}  # view -> (source, type)
        for instr in program.instrs:
            if instr.opcode is Opcode.ALLOC and instr.type is not None:
                self.alloc_types.setdefault(instr.name, instr.type)
            elif instr.opcode is Opcode.VIEW and instr.type is not None and len(instr.operands) == 1:
                self.views.setdefault(instr.name, (instr.operands[0].name, instr.type))
        self.shadow = Shadow(program, program.peak_bytes)
        self.index = 0
        # per instruction index, what a kernel or copy derives from the instruction
        # alone (its operand kinds checked, its spec, its attributes): the same in
        # every run, so made in the first and read in the next (``static``)
        self.statics: dict[int, tuple] = {}

    # -- module memory ---------------------------------------------------------

    def load(self, values: Mapping[str, np.ndarray]) -> None:
        unknown = sorted(set(values) - {b.name for b in self.program.buffers if b.kind is not BufferKind.CONSTANT})
        if unknown:
            raise UsageError(f"values for {', '.join(unknown)}, which name no placeholder or owned buffer")
        for b in self.program.buffers:
            dtype = np.dtype(b.type.dtype.value)
            if b.kind is not BufferKind.CONSTANT and b.name in values:
                value = np.asarray(values[b.name])
                if value.shape != b.type.shape or value.dtype != dtype:
                    raise UsageError(f"value for {b.name} is {value.dtype}{list(value.shape)}, the buffer is {b.type}")
            else:
                storage = Storage(b.name, StorageKind(b.kind.value), b.type.dtype, b.type.shape, init=b.init, owner=b.owner)
                self.module[b.name][:] = np.frombuffer(_initial_bytes(storage), dtype=np.uint8)
                continue
            self.module[b.name][:] = np.ascontiguousarray(value, dtype=dtype).reshape(-1).view(np.uint8)

    def read_back(self) -> dict[str, np.ndarray]:
        out = {}
        for b in self.program.buffers:
            if b.kind in (BufferKind.PLACEHOLDER, BufferKind.OWNED):
                out[b.name] = self.module[b.name].view(np.dtype(b.type.dtype.value)).reshape(b.type.shape).copy()
        return out

    # -- one run ---------------------------------------------------------------

    def run(self) -> None:
        self.arena.fill(POISON)
        self.shadow.reset()
        step = {Opcode.ALLOC: self.alloc, Opcode.DEALLOC: self.dealloc, Opcode.VIEW: self.view, Opcode.COPY: self.copy}
        for index, instr in enumerate(self.program.instrs):
            self.index = index
            step.get(instr.opcode, self.kernel)(instr)
        self.shadow.finish()

    def fail(self, inv: str, message: str, *names: str) -> Exception:
        return ir_violation(self.program, self.index, inv, message, *names)

    def region(self, name: str) -> tuple[int, int]:
        """The arena bytes of activation ``name``."""
        if name not in self.offsets:
            raise self.fail("MEM-1", f"activation {name} has no arena offset", name)
        lo = self.offsets[name]
        hi = lo + self.alloc_types[name].nbytes
        if lo < 0 or hi > self.arena.size:
            raise self.fail("MEM-1", f"{name} at bytes [{lo}, {hi}) lies outside the arena of {self.arena.size} bytes", name)
        return lo, hi

    def alloc(self, instr: Instr) -> None:
        if instr.name not in self.alloc_types:
            raise self.fail("IR-1", f"alloc of {instr.name} without a type", instr.name)
        lo, hi = self.region(instr.name)
        self.shadow.alloc(self.index, instr.name, lo, hi)
        self.arena[lo:hi] = POISON

    def dealloc(self, instr: Instr) -> None:
        if instr.name not in self.alloc_types:
            raise self.fail("IR-1", f"dealloc of {instr.name}, which no alloc defines", instr.name)
        lo, hi = self.region(instr.name)
        mine = self.shadow.dealloc(self.index, instr.name, lo, hi)
        self.arena[lo:hi][mine] = POISON

    def view(self, instr: Instr) -> None:
        if len(instr.operands) != 1 or instr.operands[0].kind is not OperandKind.IN or instr.type is None:
            raise self.fail("IR-1", "a view takes one @in source and has a type", instr.name)
        source = self.resolve(instr.operands[0])
        # a view reads nothing by itself; only owned state may not even be aliased (IR-5)
        if source.buffer is not None and source.buffer.kind is BufferKind.OWNED:
            self.shadow.check_access(self.index, instr, instr.operands[0], source.buffer)
        size = source.hi - source.lo
        if instr.type.nbytes != size:
            raise self.fail("IR-1", f"view {instr.name} ({instr.type}) does not cover its source's {size} bytes", instr.name)
        self.shadow.define_view(instr.name)

    # -- operands ----------------------------------------------------------------

    def resolve(self, operand: Operand) -> _Loc:
        """Where ``operand``'s bytes are now; IR-1 unless it names a module buffer,
        a live activation, or a defined view of one."""
        name = operand.name
        chain = [name]
        type_: TensorType | None = None
        while name in self.views and name not in self.alloc_types:
            self.shadow.check_view_defined(self.index, name)
            source, view_type = self.views[name]
            type_ = type_ or view_type
            if source in chain:
                raise self.fail("IR-1", f"views {' -> '.join(chain + [source])} form a cycle", name)
            chain.append(source)
            name = source
        buffer = self.program.buffer_by_name.get(name)
        if buffer is not None:
            memory = self.module[name]
            return _Loc(name, memory, 0, memory.size, type_ or buffer.type, buffer)
        if name in self.alloc_types:
            self.shadow.check_activation_live(self.index, operand.name, name)
            lo, hi = self.region(name)
            return _Loc(name, self.arena, lo, hi, type_ or self.alloc_types[name], None)
        raise self.fail("IR-1", f"{operand.name} names no module buffer, activation or view", operand.name)

    def prepare(self, instr: Instr) -> list[_Loc]:
        """Resolve every operand, then check access rights, then the bytes it reads."""
        locs = [self.resolve(o) for o in instr.operands]
        for operand, loc in zip(instr.operands, locs, strict=True):
            if loc.buffer is not None:
                self.shadow.check_access(self.index, instr, operand, loc.buffer)
        for operand, loc in zip(instr.operands, locs, strict=True):
            if operand.kind.reads and loc.buffer is None:
                self.shadow.check_read(self.index, operand, loc.origin, loc.lo, loc.hi)
        return locs

    def commit(self, target: _Loc, chunk_value: Callable[[], np.ndarray], stale: Callable[[], None] | None = None) -> None:
        """Write ``target`` chunk by chunk; ``chunk_value()`` recomputes the whole
        value from memory as it is now, of which each chunk keeps its slice.
        ``stale`` (when ``target`` overlaps bytes the value is computed from) is
        called after each chunk: ``chunk_value`` may reuse an earlier value only
        while no chunk was written over what it read."""
        flat, shape = target.flat(), target.type.shape
        checked, flat_value = None, None  # the last value checked, and its elements
        for lo, hi in _chunks(target.size):
            value = chunk_value()
            if value is not checked:  # a value is computed again only after ``stale``
                if value.shape != shape or value.dtype != flat.dtype:
                    raise self.fail(
                        "IR-1",
                        f"the instruction produces {value.dtype}{list(value.shape)} for {target.origin}, which is {target.type}",
                        target.origin,
                    )
                checked, flat_value = value, value.reshape(-1)
            flat[lo:hi] = flat_value[lo:hi]  # type: ignore[index]
            if stale is not None:
                stale()
        if target.buffer is None:
            self.shadow.wrote(target.lo, target.hi)

    # -- data instructions ---------------------------------------------------------

    def copy(self, instr: Instr) -> None:
        self.static(instr)
        dest, source = self.prepare(instr)
        if dest.type != source.type:
            raise self.fail("IR-1", f"copy from {source.type} into {dest.type}", instr.name)
        self.poison(dest)
        value = _Cached(lambda: (source.array().copy(),))
        self.commit(dest, lambda: value.get()[0], value.clear if dest.overlaps(source) else None)

    def static(self, instr: Instr) -> tuple:
        """IR-1 for the operand kinds of a copy or kernel (``signature_problem``),
        then, for a kernel, ``(spec, n_out, n_in, inplace inputs per result,
        attributes)``: functions of the instruction (and the swap points, fixed
        for a machine's runs), made once per machine."""
        found = self.statics.get(self.index)
        if found is not None:
            return found
        problem = signature_problem(instr)
        if problem is not None:
            raise self.fail("IR-1", problem, instr.name)
        found = ()
        if instr.opcode is Opcode.KERNEL:
            spec = spec_of(instr.op)  # type: ignore[arg-type]  # checked: a kernel has an op
            n_out, n_in = len(instr.operands_of(OperandKind.OUT)), len(instr.operands_of(OperandKind.IN))
            inplace = tuple(tuple(spec.inplace_inputs(k)) for k in range(n_out))
            attrs = {a.name: a.default for a in spec.attrs} | instr.attr_dict()  # a hand-written kernel may omit defaults
            found = (spec, n_out, n_in, inplace, attrs)
        self.statics[self.index] = found
        return found

    def kernel(self, instr: Instr) -> None:
        _, n_out, n_in, inplace, attrs = self.static(instr)
        locs = self.prepare(instr)
        outs, ins, state = locs[:n_out], locs[n_out : n_out + n_in], locs[n_out + n_in :]
        for k, out in enumerate(outs):
            if not any(i < len(ins) and ins[i].same_bytes(out) for i in inplace[k]):
                self.poison(out)

        def compute() -> tuple[np.ndarray, ...]:
            results, new_state = self.kernel_values(instr, [loc.array() for loc in ins], [loc.array() for loc in state], attrs)
            return results + new_state

        values, reads = _Cached(compute), ins + state
        for j, target in enumerate(outs + state):
            aliased = any(target.overlaps(r) for r in reads)
            self.commit(target, lambda j=j: values.get()[j], values.clear if aliased else None)

    def kernel_values(
        self, instr: Instr, ins: list[np.ndarray], state: list[np.ndarray], attrs: dict[str, object]
    ) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
        """The op's kernel on ``ins`` and ``state``; a run-time error names the node."""
        try:
            return run_kernel(instr.op, ins, state, attrs)  # type: ignore[arg-type]
        except ExecutionError as e:
            op = instr.op.value if instr.op is not None else "?"
            raise ExecutionError(f"node '{instr.name}' ({op}): {e}", node=instr.name) from None

    def poison(self, loc: _Loc) -> None:
        loc.memory[loc.lo : loc.hi] = POISON


class _Cached:
    """The value of ``compute()``, computed again only after ``clear()``.

    The kernels are pure: the same operand bytes give the same values. So a
    chunk's "whole kernel on memory as it is now" equals the last computed
    value until a committed chunk writes bytes the kernel reads, and the
    caller clears exactly then (``commit``'s ``stale``)."""

    def __init__(self, compute: Callable[[], tuple[np.ndarray, ...]]):
        self.compute = compute
        self.value: tuple[np.ndarray, ...] | None = None

    def get(self) -> tuple[np.ndarray, ...]:
        if self.value is None:
            self.value = self.compute()
        return self.value

    def clear(self) -> None:
        self.value = None


@lru_cache(maxsize=1024)
def _chunks(size: int) -> tuple[tuple[int, int], ...]:
    """``CHUNKS`` consecutive pieces of ``range(size)`` (at least two when ``size >= 2``)."""
    k = max(1, min(size, CHUNKS))
    bounds = [size * i // k for i in range(k + 1)]
    return tuple(zip(bounds[:-1], bounds[1:], strict=True))


@lru_cache(maxsize=1024)
def _initial_bytes_cached(storage: Storage) -> bytes:
    return np.ascontiguousarray(initial_value(storage)).reshape(-1).view(np.uint8).tobytes()


def _initial_bytes(storage: Storage) -> bytes:
    """The bytes of ``initial_value(storage)``. A seeded or zero value is
    remembered by its storage (a function of its fields); an explicit one is
    made each time (its floats compare by value: ``0.0 == -0.0`` would share
    a key while their bits differ)."""
    if storage.init is not None and storage.init.value is not None:
        return np.ascontiguousarray(initial_value(storage)).reshape(-1).view(np.uint8).tobytes()
    return _initial_bytes_cached(storage)
