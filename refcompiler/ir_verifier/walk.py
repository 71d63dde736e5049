"""IR-1..IR-6: one walk over the instructions, in order (see ``refcompiler.ir_verifier``)."""

from __future__ import annotations

import functools

from specs import Dtype, OpKind, OpSpec, ShapeError, TensorType
from specs.cached import cached_property

from refcompiler import limits, memos, variants
from refcompiler.errors import InvariantViolation
from refcompiler.ir import Buffer, BufferKind, Instr, Opcode, Operand, OperandKind, Program, entry_saves
from refcompiler.ir_analysis import follow_views
from refcompiler.ir_text import ir_violation
from refcompiler.ir_verifier.rules import check_ir4, check_ir6
from refcompiler.limits import MAX_RANK, shown
from refcompiler.spec import spec_of
from refcompiler.verifier import attr_ok

__all__ = ["Walk"]

_COPY_KINDS = (OperandKind.OUT, OperandKind.IN)


@functools.lru_cache(maxsize=256)
def _KERNEL_KINDS(n_out: int, n_in: int, n_state: int) -> tuple[OperandKind, ...]:
    """A kernel's operand kinds: its results, inputs and state, in that order."""
    return (OperandKind.OUT,) * n_out + (OperandKind.IN,) * n_in + (OperandKind.INOUT,) * n_state


# What the walks under the last swap table learnt from it: the specs they asked
# for (``spec_of``, one per op kind: a bounded table) and the kernel
# instructions whose operands were found to follow their op's signature (by
# ``id``, each kept alive by its entry so that the id stays its own; cleared
# when it grows past ``_SIGNATURES_KEPT``). Both are functions of the op kind,
# the instruction (immutable) and the swap points installed (``spec_of`` is
# one): a walk under another swap table starts afresh. The table is held here,
# so that its identity stays unique while kept.
# And the typings found (``_typing_fault``, by op, attributes and operand types).
# And the typing found per kernel instruction (by ``id``, with the instruction and
# its operand types: the same instruction in another program may see other types).
_SPECS: tuple[object, dict[OpKind, OpSpec], dict[int, Instr], dict[tuple, str], dict[int, tuple]] = (None, {}, {}, {}, {})
_SIGNATURES_KEPT = 4096


def _forget() -> None:
    global _SPECS
    _SPECS = (None, {}, {}, {}, {})


memos.on_forget(_forget)

# Members as module globals: each is asked of every operand, and a member read
# off its enum class is slow on Python 3.11 (see ``refcompiler.ir``).
_IN, _OUT, _INOUT = OperandKind.IN, OperandKind.OUT, OperandKind.INOUT
_OWNED, _CONSTANT, _PLACEHOLDER = BufferKind.OWNED, BufferKind.CONSTANT, BufferKind.PLACEHOLDER
_KERNEL, _COPY = Opcode.KERNEL, Opcode.COPY

# Types ``_type_problem`` found nothing wrong with, by ``id`` (each kept by its
# entry, so that the id stays its own): a function of the type alone, and the
# programs of one graph share their type objects. Cleared when full.
_GOOD_TYPES: dict[int, TensorType] = memos.kept({})


def _specs_under(swaps: object) -> tuple[dict[OpKind, OpSpec], dict[int, Instr], dict[tuple, str], dict[int, tuple]]:
    """The specs, well-formed kernels, typings and typed kernels known under
    swap table ``swaps`` (``variants.active()``), to add to."""
    global _SPECS
    known = _SPECS
    if known[0] is not swaps:
        known = _SPECS = (swaps, {}, {}, {}, {})
    else:
        for table in known[2:]:
            if len(table) > _SIGNATURES_KEPT:
                table.clear()
    return known[1], known[2], known[3], known[4]


def _type_ok(t: object) -> str:
    """``_type_problem(t)``, remembered for a type found good (``_GOOD_TYPES``)."""
    if _GOOD_TYPES.get(id(t)) is t:
        return ""
    problem = _type_problem(t)
    if not problem:
        if len(_GOOD_TYPES) > _SIGNATURES_KEPT:
            _GOOD_TYPES.clear()
        _GOOD_TYPES[id(t)] = t  # type: ignore[assignment]  # a TensorType: no problem found
    return problem


def _type_problem(t: object) -> str:
    """Why ``t``, an ``alloc``'s or ``view``'s type, is no tensor type the
    memory can hold (a dtype, at most ``MAX_RANK`` dimensions of at least 1, as a
    graph's tensors have), or empty."""
    if not isinstance(t, TensorType) or not isinstance(t.dtype, Dtype) or type(t.shape) is not tuple:
        return f"{shown(t)} is not a tensor type"
    if len(t.shape) > MAX_RANK:
        return f"{t} has rank {len(t.shape)}, more than {MAX_RANK}"
    if not all(type(d) is int and d >= 1 for d in t.shape):
        return f"{t} has a dimension that is not a whole number of at least 1 (as in a graph)"
    return ""


def _typing_fault(spec: OpSpec, instr: Instr, types: tuple[TensorType, ...]) -> str:
    """Why a kernel's operand types (its results, inputs and state, in order;
    its signature is well-formed) are not what its op's type rule makes of its
    inputs and attributes, the rule the graph verifier applies to nodes (G-1);
    empty when they are."""
    n_out, n_state = len(spec.results), len(spec.state)
    outs, ins, state = types[:n_out], types[n_out : len(types) - n_state], types[len(types) - n_state :]
    first = ins[0].dtype if ins else None
    for k, t in enumerate(ins):
        want = spec.input_dtype(k, first)
        if want is not None and t.dtype is not want:
            return f"{spec.name} input {k} is {t}, its op needs {want.value}"
    for k, t in enumerate(state):
        if t.dtype is not Dtype.FLOAT32:
            return f"{spec.name} state {k} is {t}, its op needs float32"
    given = dict(instr.attrs)
    for key, value in given.items():
        a = next((a for a in spec.attrs if a.name == key), None)
        if a is None:
            return f"{spec.name} has no attribute {shown(key)}"
        if not attr_ok(a.kind, value) and not (value is None and a.default is None):  # an optional one left at its default
            return f"{spec.name} attribute '{key}' must be {a.kind.value}, got {shown(value)}"
    attrs = {a.name: given.get(a.name, a.default) for a in spec.attrs}  # an attribute left out has its default, as in a node
    try:
        results = tuple(spec.shape_rule(list(ins), list(state), attrs))
    except ShapeError as e:
        return f"{spec.name} of {', '.join(map(str, ins))}: {e}"
    except Exception as e:  # attribute values of the right kind that the rule still cannot use
        return f"{spec.name} cannot type its operands with attributes {shown(given, 200)}: {type(e).__name__}: {shown(str(e), 200)}"
    if results != outs:
        return f"{spec.name} of {', '.join(map(str, ins))} gives {', '.join(map(str, results))}, but its results are {', '.join(map(str, outs))}"
    return ""


class Walk:
    """State of the walk: what is defined, live, initialised and written so far.
    (A plain class: a walk is made for every program verified, and a
    dataclass's field factories are a share of the walk of a small one.)"""

    def __init__(self, program: Program, bounds: tuple[int, ...]) -> None:
        self.program = program
        self.bounds = bounds  # the element and byte limits (``verdict_context``)
        self.found: list[InvariantViolation] = []
        self.allocated: dict[str, int] = {}  # activation -> its alloc
        self.freed: dict[str, int] = {}  # activation -> its dealloc
        self.views: dict[str, str] = {}  # view -> its source
        self.types: dict[str, TensorType] = {}  # activations and views
        self.initialised: set[str] = set()  # activation origins written so far
        self.placeholder_writer: dict[str, int] = {}
        self.saved_by_copy: dict[str, int] = {}  # placeholders a copy wrote
        self.buffers: dict[str, Buffer] = program.buffer_by_name
        # Who may write each placeholder (IR-4): its save's copy, or the kernel
        # producing the saved value once copy elimination has removed the copy.
        self.allowed_writers = program.placeholder_writers
        self.entry_saves = entry_saves(program)  # copies that read a placeholder's value at entry
        self.index = 0
        # what the walk asks of the op table, shared by the walks under one swap table
        self.specs, self.well_formed, self.typings, self.typed = _specs_under(variants.active())
        # a pass's allocations are bounded as a file's tensors are (refcompiler.limits): each
        # by the element limit, all together by twice the byte limit (a valid graph's results
        # are within it, and the copies that break save cycles at most double them)
        self.max_elements, self.max_bytes = bounds[0], 2 * bounds[1]
        self.allocated_bytes = 0

    @cached_property
    def defined_at(self) -> dict[str, int]:
        """Where each name is first defined, to tell "defined later" from "never
        defined" (asked only to word a report)."""
        found: dict[str, int] = {}
        for i, instr in enumerate(self.program.instrs):
            if instr.opcode in (Opcode.ALLOC, Opcode.VIEW):
                found.setdefault(instr.name, i)
        return found

    def run(self) -> None:
        """Walk every instruction, in order, then ``finish``. The opcode is tested
        by identity: cheaper than hashing the enum into a table of handlers."""
        data, alloc, dealloc, view = self.data, self.alloc, self.dealloc, self.view
        kernel_op, copy_op, alloc_op, dealloc_op, view_op = Opcode.KERNEL, Opcode.COPY, Opcode.ALLOC, Opcode.DEALLOC, Opcode.VIEW
        for index, instr in enumerate(self.program.instrs):
            self.index = index
            opcode = instr.opcode
            if opcode is kernel_op or opcode is copy_op:
                data(instr)
            elif opcode is alloc_op:
                alloc(instr)
            elif opcode is dealloc_op:
                dealloc(instr)
            elif opcode is view_op:
                view(instr)
            else:
                raise KeyError(opcode)  # no opcode of the IR: as a table of handlers by opcode would
        self.finish()

    def report(self, inv: str, message: str, *names: str) -> None:
        self.found.append(ir_violation(self.program, self.index, inv, message, *names))

    # -- name resolution -------------------------------------------------

    def origin(self, name: str) -> str:
        return follow_views(self.views, name)  # the views defined so far

    def type_of(self, name: str) -> TensorType | None:
        if name in self.buffers:
            return self.buffers[name].type
        return self.types.get(name)

    def unresolved(self, name: str) -> str | None:
        """Why ``name`` is not usable here (IR-1), or ``None`` if it is."""
        root = self.origin(name)
        via = f" (a view of {root})" if root != name else ""
        if root in self.buffers:
            return None
        if root in self.freed:
            return f"{name}{via} is used after its dealloc at instruction {self.freed[root]}"
        if root in self.allocated:
            return None
        later = self.defined_at.get(root)
        if later is not None and later > self.index:
            return f"{name}{via} is used before its definition at instruction {later}"
        return f"{name}{via} is not a module buffer, an allocation or a view"

    def kind_of(self, root: str) -> BufferKind:
        buffer = self.buffers.get(root)
        return buffer.kind if buffer is not None else BufferKind.ACTIVATION

    def fresh(self, name: str) -> bool:
        """IR-1: a name is defined once and never shadows a module buffer."""
        if name in self.buffers:
            self.report("IR-1", f"{name} is a module buffer and cannot be defined again", name)
            return False
        if name in self.allocated or name in self.views:
            self.report("IR-1", f"{name} is defined twice", name)
            return False
        return True

    # -- instructions ----------------------------------------------------

    def own_operands_ok(self, instr: Instr) -> bool:
        """``alloc``/``dealloc`` may list the name they define or end, and nothing else."""
        operands = instr.operands
        if not operands or (len(operands) == 1 and operands[0].name == instr.name):
            return True
        self.report("IR-1", f"{instr.opcode.value} takes no operand but its own name {instr.name}", instr.name)
        return False

    def alloc(self, instr: Instr) -> None:
        if not self.own_operands_ok(instr) or not self.fresh(instr.name):
            return
        t = instr.type
        if t is None:
            self.report("IR-1", f"alloc of {instr.name} has no type", instr.name)
            return
        self.allocated[instr.name] = self.index  # even when its type is refused: its uses and dealloc are not faults too
        problem = _type_ok(t)
        if not problem and t.size > self.max_elements:
            problem = f"{t} has {t.size} elements, more than the limit {self.max_elements} ({limits.LIMITS['elements'].env})"
        if problem:
            self.report("IR-1", f"alloc of {instr.name}: {problem}", instr.name)
            return
        before, self.allocated_bytes = self.allocated_bytes, self.allocated_bytes + t.nbytes
        if self.allocated_bytes > self.max_bytes >= before:  # said at the alloc that crosses it
            self.report("IR-1", f"alloc of {instr.name}: the program's allocations reach {self.allocated_bytes} bytes, "
                                f"more than twice the limit {self.max_bytes // 2} ({limits.LIMITS['bytes'].env})", instr.name)
        self.types[instr.name] = t

    def dealloc(self, instr: Instr) -> None:
        if not self.own_operands_ok(instr):
            return
        name = instr.name
        if name in self.freed:
            self.report("IR-1", f"{name} is deallocated twice (first at instruction {self.freed[name]})", name)
        elif name in self.allocated:
            self.freed[name] = self.index
        elif name in self.buffers:
            self.report("IR-1", f"{name} is a module buffer, which is never deallocated", name)
        elif name in self.views:
            self.report("IR-1", f"{name} is a view, which is never deallocated (its origin is)", name)
        elif self.defined_at.get(name, -1) > self.index:
            self.report("IR-1", f"{name} is deallocated before its alloc at instruction {self.defined_at[name]}", name)
        else:
            self.report("IR-1", f"{name} is deallocated but never allocated", name)

    def view(self, instr: Instr) -> None:
        if len(instr.operands) != 1 or instr.operands[0].kind is not OperandKind.IN:
            self.report("IR-1", "a view takes exactly one @in operand, its source", instr.name)
            return
        source = instr.operands[0].name
        problem = self.unresolved(source)
        if problem is not None:
            self.report("IR-1", problem, source)
            return
        if not self.fresh(instr.name):
            return
        if instr.type is None:
            self.report("IR-1", f"view {instr.name} has no type", instr.name)
            return
        problem = _type_ok(instr.type)
        if problem:
            self.report("IR-1", f"view {instr.name}: {problem}", instr.name)
            return
        source_type = self.type_of(source)
        if source_type is not None and source_type.nbytes != instr.type.nbytes:
            self.report("IR-1", f"view {instr.name}: {instr.type} does not cover {source}: {source_type}", instr.name)
        root = self.origin(source)
        if self.kind_of(root) is BufferKind.OWNED:
            self.report("IR-5", f"owned buffer {root} is the source of a view; only its owner may refer to it", root)
        self.views[instr.name] = source
        self.types[instr.name] = instr.type

    def data(self, instr: Instr) -> None:
        # A malformed signature is reported, and the operands are still walked
        # so that one fault does not cascade into reports about later reads.
        # The checks run in a fixed order (signature, names, IR-3 and IR-5 per
        # operand, IR-2, IR-4, IR-6); the last two look closer only where an
        # operand could break them (a placeholder; a shared buffer).
        if self.well_formed.get(id(instr)) is instr:  # a kernel found well-formed under these swaps
            well_formed = True
        else:
            well_formed = self.signature_ok(instr)
            if well_formed and instr.opcode is _KERNEL:  # a copy's verdict depends on the walk's types
                self.well_formed[id(instr)] = instr
        buffers, views, allocated = self.buffers, self.views, self.allocated
        resolved: list[tuple[int, Operand, str]] = []  # (position, operand, origin)
        shared = module = False
        placeholders: list[tuple[Operand, str]] = []  # (operand, origin) on placeholders
        ir4 = False  # a placeholder written, or read after its save copy: IR-4 has something to check
        written: set[str] = set()
        read: set[str] = set()
        freed, initialised, saved_by_copy = self.freed, self.initialised, self.saved_by_copy
        # reads that see a placeholder's entry value only: a save's copy of a module buffer's value
        entry_save = instr.opcode is _COPY and instr.name in self.entry_saves
        entry_read = self.placeholder_writer if entry_save else saved_by_copy
        in_kind, out_kind = _IN, _OUT  # locals: each is asked of every operand
        owned, constant, placeholder = _OWNED, _CONSTANT, _PLACEHOLDER
        unwritten = False  # an operand IR-2 reports
        walked = self.types
        types: list[TensorType | None] = []  # each operand's (``type_of``), for the typing check
        for position, operand in enumerate(instr.operands):
            name = operand.name
            if name in views:  # a view is no module buffer (``fresh``): its type is the walk's
                root = follow_views(views, name)
                buffer = buffers.get(root)
                types.append(walked.get(name))
            else:
                root = name
                buffer = buffers.get(name)
                types.append(buffer.type if buffer is not None else walked.get(name))
            if buffer is None and (root not in allocated or root in freed):
                self.report("IR-1", self.unresolved(name), name)  # type: ignore[arg-type]  # not usable here
                continue
            resolved.append((position, operand, root))
            kind = operand.kind
            writes = kind is not in_kind
            if writes:
                shared = shared or root in written or root in read
                written.add(root)
            else:
                shared = shared or root in written
                read.add(root)
            if kind is not out_kind and root not in initialised and root in allocated:
                unwritten = True
            if buffer is not None:
                kind = buffer.kind
                module = module or kind is owned or (writes and kind is constant)
                if kind is placeholder:
                    placeholders.append((operand, root))
                    ir4 = ir4 or writes or root in entry_read
        if module:  # after every name is resolved, as the reports come in that order
            for _, operand, root in resolved:
                self.check_ir3(operand, root)
                self.check_ir5(instr, operand, root)
        if unwritten:
            self.check_ir2(resolved)
        if ir4:  # else check_ir4 finds nothing to report and nothing to record
            check_ir4(self, instr, placeholders, entry_save)
        if well_formed and shared:  # in-place rules need the op and operand positions
            check_ir6(self, instr, resolved)
        if well_formed and instr.opcode is _KERNEL:  # after IR-6, whose words are closer for an in-place pair of two types
            self.check_typing(instr, types)
        self.initialised |= written

    # -- signatures (IR-1) -------------------------------------------------

    def signature_ok(self, instr: Instr) -> bool:
        kinds = tuple([o.kind for o in instr.operands])
        if instr.opcode is Opcode.COPY:
            if kinds != _COPY_KINDS:
                self.report("IR-1", "a copy takes @out destination, @in source", instr.name)
                return False
            dest, source = (self.type_of(o.name) for o in instr.operands)
            if dest is not None and source is not None and dest != source:
                self.report("IR-1", f"copy from {source} into {dest}", instr.name)
                return False
            return True
        if instr.op is None:
            self.report("IR-1", "a kernel without an op", instr.name)
            return False
        spec = self.spec(instr.op)
        n_out, n_state = len(spec.results), len(spec.state)
        n_in = len(kinds) - n_out - n_state
        inputs_ok = n_in >= 1 if spec.variadic else n_in == len(spec.inputs)
        if not inputs_ok or kinds != _KERNEL_KINDS(n_out, n_in, n_state):
            n_inputs = "1 or more" if spec.variadic else len(spec.inputs)
            want = f"{len(spec.results)} @out, {n_inputs} @in, {len(spec.state)} @inout"
            self.report("IR-1", f"{spec.name} takes {want}, in that order", instr.name)
            return False
        return True

    def check_typing(self, instr: Instr, operand_types: list[TensorType | None]) -> None:
        """IR-1: the kernel's operand types (``operand_types``: ``type_of`` each
        operand) follow its op's type rule (``_typing_fault``), remembered per
        instruction with its operand types and per op, attributes and types. An
        operand without a type here is unresolved, which the walk reports."""
        for t in operand_types:  # by identity (``None in`` would call each type's ``==``)
            if t is None:
                return
        types = tuple(operand_types)
        seen = self.typed.get(id(instr))  # this kernel, typed before (``_specs_under``)
        if seen is not None and seen[0] is instr and seen[1] == types:
            if seen[2]:
                self.report("IR-1", seen[2], instr.name)
            return
        fault = self.typing(instr, types)
        self.typed[id(instr)] = (instr, types, fault)  # the instruction kept: its id stays its own
        if fault:
            self.report("IR-1", fault, instr.name)

    def typing(self, instr: Instr, types: tuple[TensorType, ...]) -> str:
        """``_typing_fault`` of a kernel with operand ``types``, remembered per op,
        attributes and types."""
        key = (instr.op, instr.attrs, types)
        try:
            fault = self.typings.get(key)
        except TypeError:  # an attribute value a pass made unhashable
            key, fault = None, None
        if fault is None:
            fault = _typing_fault(self.spec(instr.op), instr, types)  # type: ignore[arg-type]  # a kernel has an op; types resolved
            if key is not None:
                self.typings[key] = fault
        return fault

    def spec(self, op: OpKind) -> OpSpec:
        """``spec_of(op)``, asked once per op and swap table (``_specs_under``)."""
        found = self.specs.get(op)
        if found is None:
            found = self.specs[op] = spec_of(op)
        return found

    # -- per-invariant checks ---------------------------------------------

    def check_ir2(self, resolved: list[tuple[int, Operand, str]]) -> None:
        # Reads of one instruction happen before its writes, so an in-place
        # instruction does not initialise its own input.
        for _, operand, root in resolved:
            if operand.kind is not OperandKind.OUT and root in self.allocated and root not in self.initialised:
                via = f" (through {operand.name})" if operand.name != root else ""
                self.report("IR-2", f"{root}{via} is read before anything writes it", root)

    def check_ir3(self, operand: Operand, root: str) -> None:
        if operand.kind.writes and self.kind_of(root) is BufferKind.CONSTANT:
            via = f" (through {operand.name})" if operand.name != root else ""
            self.report("IR-3", f"constant {root}{via} is written (@{operand.kind.value})", root)

    def check_ir5(self, instr: Instr, operand: Operand, root: str) -> None:
        buffer = self.buffers.get(root)
        if buffer is None or buffer.kind is not BufferKind.OWNED:
            return
        if instr.opcode is not Opcode.KERNEL or instr.name != buffer.owner:
            user = f"the {instr.opcode.value} {instr.name}"
            self.report("IR-5", f"owned buffer {root} is used by {user}; only its owner's kernel {buffer.owner} may", root)
        elif operand.kind is not OperandKind.INOUT:
            self.report("IR-5", f"owned buffer {root} is @{operand.kind.value} in its owner, not @inout", root)
        elif operand.name != root:
            self.report("IR-5", f"owned buffer {root} is used through the view {operand.name}", root)

    def finish(self) -> None:
        for name, at in self.allocated.items():
            if name not in self.freed:
                self.index = at
                self.report("IR-1", f"{name} is never deallocated", name)
