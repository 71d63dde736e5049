"""The execution plan of an allocated program (DESIGN §5): everything the IR
interpreter derives from the program alone, made once and cached.

Every sanitizer check (``refcompiler.sanitizer``) is a function of the program
and not of the values: the shadow state follows the allocs, deallocs and
writes, which run in program order whatever the data, and it is reset at the
start of every run. So the checks are run once, here, in exactly the order the
interpreter used to run them; the plan keeps

- ``steps``: the allocs and deallocs (the arena bytes they poison) and the
  data instructions (kernels and copies) before the first violation, each
  with its operands resolved to byte ranges, which outputs to poison, and
  which results are committed chunk by chunk;
- ``failure``: the first violation (or other error) the checks raise, which
  every run raises after running ``steps`` -- exactly where the interpreter's
  run would have raised it, since everything before it is data work.
- ``locs``: every location an operand resolved to, numbered (``Loc.slot``):
  a run makes one view of each over its memory and the steps name them by
  number.

What a plan depends on besides the program: the swap points (``spec_of`` gives
the in-place lists and the signatures). ``plan_of`` caches plans by the
identity of the program (immutable) and of the swap table installed
(``variants.active``, held by the entry, so its identity is not reused); the
cache is bounded.
"""

from __future__ import annotations

from collections import OrderedDict
from threading import Lock

from specs import TensorType

from refcompiler import memos, variants
from refcompiler.execution_steps import CopyStep, KernelStep, Loc, Plan, PoisonStep
from refcompiler.ir import BufferKind, Instr, Opcode, Operand, OperandKind, Program, signature_problem
from refcompiler.ir_text import ir_violation
from refcompiler.kernel_facts import kernel_facts
from refcompiler.sanitizer import Shadow

__all__ = ["plan_of"]

CACHE_SIZE = 64  # plans kept (most recently used)

_CACHE: OrderedDict[int, tuple[Program, object, Plan]] = OrderedDict()
_CACHE_LOCK = Lock()  # threads share the cache (a Dask worker's, or a caller's): its reorderings are not atomic


def _forget() -> None:
    with _CACHE_LOCK:
        _CACHE.clear()


memos.on_forget(_forget)


def plan_of(program: Program) -> Plan:
    """The plan of allocated ``program`` under the swap points installed now."""
    swaps = variants.active()
    with _CACHE_LOCK:
        hit = _CACHE.get(id(program))
        if hit is not None and hit[0] is program and hit[1] is swaps:
            _CACHE.move_to_end(id(program))
            return hit[2]
    plan = _Planner(program, swaps).plan()
    with _CACHE_LOCK:
        _CACHE[id(program)] = (program, swaps, plan)  # holds program: its id is not reused meanwhile
        _CACHE.move_to_end(id(program))
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return plan


class _Planner:
    """One run's checks, in the interpreter's order, without the data."""

    def __init__(self, program: Program, swaps: object | None = None):
        """``swaps``: ``variants.active()``, the swap table installed now
        (asked when not given)."""
        assert program.peak_bytes is not None  # the interpreter checks it first
        self.program = program
        self.arena_size = program.peak_bytes
        self.offsets = program.offset_of
        self.buffers = program.buffer_by_name
        self.alloc_types = alloc_types = {}  # type: dict[str, TensorType]
        self.views = views = {}  # type: dict[str, tuple[str, TensorType]]  # view -> (source, type)
        ids: dict[str, int] = {}  # the shadow's activation ids (``Shadow.ids``), from the same walk
        alloc, view = _ALLOC, _VIEW
        for instr in program.instrs:
            opcode = instr.opcode
            if opcode is alloc:
                name = instr.name
                if name not in ids:
                    ids[name] = len(ids)
                if instr.type is not None and name not in alloc_types:
                    alloc_types[name] = instr.type
            elif opcode is view and instr.type is not None and len(instr.operands) == 1:
                views.setdefault(instr.name, (instr.operands[0].name, instr.type))
        self.through = self.views.keys() - self.alloc_types.keys()  # the names seen through views
        # what ``resolve`` and ``region`` found for a name: a function of the name
        # (the checks that depend on the moment are made again at every use)
        self.locs: dict[str, Loc] = {}
        self.slots: list[Loc] = []  # every Loc made, by its slot
        self.regions: dict[str, tuple[int, int]] = {}
        self.shadow = Shadow(program, program.peak_bytes, ids)
        self.swaps = variants.active() if swaps is None else swaps
        self.index = 0
        self.steps: list[PoisonStep | KernelStep | CopyStep] = []

    def plan(self) -> Plan:
        kernel, alloc, dealloc, view, copy = _KERNEL, _ALLOC, _DEALLOC, _VIEW, _COPY
        try:
            for index, instr in enumerate(self.program.instrs):
                self.index = index
                opcode = instr.opcode
                if opcode is kernel:  # the most frequent first
                    self.kernel(instr)
                elif opcode is alloc:
                    self.alloc(instr)
                elif opcode is dealloc:
                    self.dealloc(instr)
                elif opcode is copy:
                    self.copy(instr)
                elif opcode is view:
                    self.view(instr)
                else:  # what ``kernel_facts`` refuses
                    self.kernel(instr)
            self.shadow.finish()
        except Exception as e:  # raised by every run, after the steps before it
            return Plan(tuple(self.steps), e, tuple(self.slots))
        return Plan(tuple(self.steps), None, tuple(self.slots))

    def fail(self, inv: str, message: str, *names: str) -> Exception:
        return ir_violation(self.program, self.index, inv, message, *names)

    def region(self, name: str) -> tuple[int, int]:
        """The arena bytes of activation ``name``."""
        found = self.regions.get(name)
        if found is not None:
            return found
        if name not in self.offsets:
            raise self.fail("MEM-1", f"activation {name} has no arena offset", name)
        lo = self.offsets[name]
        hi = lo + self.alloc_types[name].nbytes
        if lo < 0 or hi > self.arena_size:
            raise self.fail("MEM-1", f"{name} at bytes [{lo}, {hi}) lies outside the arena of {self.arena_size} bytes", name)
        self.regions[name] = lo, hi
        return lo, hi

    def alloc(self, instr: Instr) -> None:
        name, index = instr.name, self.index
        if name not in self.alloc_types:
            raise self.fail("IR-1", f"alloc of {name} without a type", name)
        lo, hi = self.regions.get(name) or self.region(name)
        self.shadow.alloc(index, name, lo, hi)
        self.steps.append(PoisonStep(index, lo, hi))

    def dealloc(self, instr: Instr) -> None:
        name, index = instr.name, self.index
        if name not in self.alloc_types:
            raise self.fail("IR-1", f"dealloc of {name}, which no alloc defines", name)
        lo, hi = self.regions.get(name) or self.region(name)
        owned = self.shadow.dealloc(index, name, lo, hi)
        self.steps.append(PoisonStep(index, lo, hi, owned))

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

    def resolve(self, operand: Operand) -> Loc:
        """Where ``operand``'s bytes are; IR-1 unless it names a module buffer,
        a live activation, or a defined view of one."""
        name = operand.name
        loc = self.locs.get(name)
        if loc is not None:  # seen before: only the checks of the moment again, in the same order
            if name in self.through:
                self.through_views(name)
            if loc.buffer is None and loc.origin not in self.shadow.live:
                self.shadow.check_activation_live(self.index, name, loc.origin)
            return loc
        if name in self.through:
            name, type_ = self.through_views(name)
        else:
            type_ = None
        buffer = self.buffers.get(name)
        slot = len(self.slots)
        if buffer is not None:
            loc = Loc(name, name, 0, buffer.type.nbytes, type_ or buffer.type, buffer, slot)
        elif name in self.alloc_types:
            if name not in self.shadow.live:  # raises
                self.shadow.check_activation_live(self.index, operand.name, name)
            lo, hi = self.region(name)
            loc = Loc(name, None, lo, hi, type_ or self.alloc_types[name], None, slot)
        else:
            raise self.fail("IR-1", f"{operand.name} names no module buffer, activation or view", operand.name)
        self.locs[operand.name] = loc
        self.slots.append(loc)
        return loc

    def through_views(self, name: str) -> tuple[str, TensorType | None]:
        """The name behind view ``name`` and the type it is seen as (the first view's)."""
        chain = [name]
        type_: TensorType | None = None
        while name in self.through:
            self.shadow.check_view_defined(self.index, name)
            source, view_type = self.views[name]
            type_ = type_ or view_type
            if source in chain:
                raise self.fail("IR-1", f"views {' -> '.join(chain + [source])} form a cycle", name)
            chain.append(source)
            name = source
        return name, type_

    def prepare(self, instr: Instr) -> tuple[Loc, ...]:
        """Resolve every operand, then check access rights, then the bytes it reads."""
        known, through, shadow = self.locs, self.through, self.shadow
        live = shadow.live
        locs = []
        module = []  # the operands in module buffers, and their locations
        reads = []  # the operands that read the arena, and their locations
        for o in instr.operands:
            name = o.name
            loc = known.get(name)
            # ``resolve`` unless it would only find ``loc`` again: seen before, not
            # through a view, and (in the arena) its activation live
            if loc is None or name in through or (loc.buffer is None and loc.origin not in live):
                loc = self.resolve(o)
            locs.append(loc)
            if loc.buffer is not None:
                module.append((o, loc))
            elif o.kind is not _OUT:  # reads (``OperandKind.reads``)
                reads.append((o, loc))
        index = self.index
        for operand, loc in module:
            shadow.check_access(index, instr, operand, loc.buffer)
        for operand, loc in reads:
            shadow.check_read(index, operand, loc.origin, loc.lo, loc.hi)
        return tuple(locs)

    def signature(self, instr: Instr) -> None:
        problem = signature_problem(instr)
        if problem is not None:
            raise self.fail("IR-1", problem, instr.name)

    def copy(self, instr: Instr) -> None:
        self.signature(instr)
        dest, source = self.prepare(instr)
        if dest.type is not source.type and dest.type != source.type:
            raise self.fail("IR-1", f"copy from {source.type} into {dest.type}", instr.name)
        self.steps.append(CopyStep(self.index, instr, dest, source, dest.overlaps(source)))
        if dest.buffer is None:
            self.shadow.wrote(dest.lo, dest.hi)

    def kernel(self, instr: Instr) -> None:
        facts = kernel_facts(instr, self.swaps)
        if type(facts) is str:
            raise self.fail("IR-1", facts, instr.name)
        n_out, n_in, attrs, inplace, _ = facts
        locs = self.prepare(instr)
        # the operands are the @out, then the @in, then the @inout (``signature_problem``)
        ins, state, reads = locs[n_out : n_out + n_in], locs[n_out + n_in :], locs[n_out:]
        written = locs[:n_out] + state
        targets = []
        chunked = False
        poison = []
        shadow = self.shadow
        for k, out in enumerate(written):
            aliased = False  # whether ``out`` overlaps what the kernel reads (``Loc.overlaps``)
            for r in reads:
                if out.memory == r.memory and out.lo < r.hi and r.lo < out.hi:
                    aliased = True
                    break
            targets.append((out, aliased))
            if aliased:
                chunked = True
                if k < n_out and not any(i < n_in and ins[i].same_bytes(out) for i in inplace[k]):
                    poison.append(out)
            if out.buffer is None:
                shadow.wrote(out.lo, out.hi)
        self.steps.append(KernelStep(self.index, instr, attrs, ins, state, tuple(poison), tuple(targets), chunked))


_OUT = OperandKind.OUT
_ALLOC, _DEALLOC, _VIEW, _COPY, _KERNEL = Opcode.ALLOC, Opcode.DEALLOC, Opcode.VIEW, Opcode.COPY, Opcode.KERNEL
