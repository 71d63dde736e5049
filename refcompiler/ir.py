"""The low-level IR: a flat list of instructions over named buffers (DESIGN §5).

Module buffers (constants, placeholders, owned state) live for the whole
program; activations are ``alloc``-ed in one flat arena and ``dealloc``-ed
after their last use; a ``view`` names a reshaped alias of a buffer or of
another view. Every instruction lists its operands with a kind:

- ``kernel`` (one per graph node): results ``@out`` in result order, then
  inputs ``@in`` in input order, then state ``@inout`` in state order;
- ``copy``: ``@out`` destination, ``@in`` source (a save lowers to one);
- ``alloc`` / ``dealloc``: the activation they define or end (``@out`` / ``@in``);
- ``view``: ``@in`` source; the view's own name and type are on the instruction.

Values are immutable: passes return new programs. ``refcompiler.ir_text``
gives the one canonical text form, which prints and parses back.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field, replace
from dataclasses import fields as dataclass_fields
from typing import Hashable, Mapping, TypeVar

from specs import FastEnum, OpKind, TensorType
from specs.cached import cached_property

from refcompiler import limits, memos
from refcompiler.errors import UsageError
from refcompiler.graph import Init
from refcompiler.spec import spec_of

_T = TypeVar("_T")

__all__ = ["OperandKind", "BufferKind", "Opcode", "Buffer", "Operand", "Instr", "Save", "Program", "IdentityTable", "identity_key", "entry_saves", "signature_problem"]


class OperandKind(FastEnum):
    IN = "in"
    OUT = "out"
    INOUT = "inout"

    @property
    def reads(self) -> bool:
        return self is not _OUT

    @property
    def writes(self) -> bool:
        return self is not _IN


class BufferKind(FastEnum):
    CONSTANT = "constant"
    PLACEHOLDER = "placeholder"
    OWNED = "owned"
    ACTIVATION = "activation"

    @property
    def module_level(self) -> bool:
        return self is not _ACTIVATION


class Opcode(FastEnum):
    ALLOC = "alloc"
    DEALLOC = "dealloc"
    VIEW = "view"
    COPY = "copy"
    KERNEL = "kernel"


@dataclass(frozen=True)
class Buffer:
    """A module-level buffer (constant, placeholder, owned); ``owner`` is the
    owning node of an owned buffer, ``init`` the storage's initial value."""

    name: str
    kind: BufferKind
    type: TensorType
    owner: str | None = None
    init: Init | None = None


@dataclass(frozen=True)
class Operand:
    kind: OperandKind
    name: str  # a module buffer, an activation, or a view


# Members as module globals, for the hot paths below: on Python 3.11 a member
# read off its enum class (``OperandKind.IN``) goes through ``EnumType``'s
# ``__getattr__`` hook and costs ~10 times a global's lookup.
_IN, _OUT = OperandKind.IN, OperandKind.OUT
_COPY = Opcode.COPY
_ACTIVATION = BufferKind.ACTIVATION
_NAMING = (Opcode.ALLOC, Opcode.DEALLOC, Opcode.VIEW)  # the opcodes whose instruction names a value


@dataclass(frozen=True)
class Instr:
    """One instruction.

    ``name``: for ``kernel`` and ``copy`` the graph node it comes from; for
    ``alloc`` and ``view`` the value it defines; for ``dealloc`` the activation
    it ends. ``type``: the type an ``alloc`` or ``view`` defines. ``op`` and
    ``attrs`` (defaults filled in): a kernel's op.
    """

    opcode: Opcode
    name: str
    operands: tuple[Operand, ...] = ()
    op: OpKind | None = None
    attrs: tuple[tuple[str, object], ...] = ()
    type: TensorType | None = None

    def attr_dict(self) -> dict[str, object]:
        return dict(self.attrs)

    def operands_of(self, kind: OperandKind) -> tuple[Operand, ...]:
        return tuple([o for o in self.operands if o.kind is kind])

    def renamed(self, names: Mapping[str, str]) -> "Instr":
        """This instruction with every operand named by a key of ``names``
        renamed to its value (and its own name, for ``alloc``/``dealloc``/``view``);
        all at once, not in turn; itself when nothing is renamed."""
        if not names:
            return self
        renames_self = self.opcode in _NAMING and self.name in names
        if not renames_self:
            for o in self.operands:  # a loop, not ``all``: asked of every instruction a pass renames in
                if o.name in names:
                    break
            else:
                return self
        name = names[self.name] if renames_self else self.name
        if type(self) is not Instr or any(type(o) is not Operand for o in self.operands):
            operands = tuple(replace(o, name=names[o.name]) if o.name in names else o for o in self.operands)
            return replace(self, operands=operands, name=name)
        # one object per instruction and renaming (``_RENAMED``), built directly
        # (``_plain``): passes rename many instructions, the same ones in every order
        new_names = tuple([names.get(o.name) for o in self.operands])
        key = (id(self), name, new_names)
        found = _RENAMED.get(key)
        if found is not None and found[0] is self:
            return found[1]
        operands = tuple(o if new is None else _plain(Operand, {"kind": o.kind, "name": new}) for o, new in zip(self.operands, new_names, strict=True))
        fields = {"opcode": self.opcode, "name": name, "operands": operands, "op": self.op, "attrs": self.attrs, "type": self.type}
        made = _plain(Instr, fields)
        if len(_RENAMED) >= _RENAMED_KEPT:
            _RENAMED.clear()
        _RENAMED[key] = (self, made)  # ``self`` kept: its id is not reused while the entry lives
        return made


# Instructions ``Instr.renamed`` made, by the instruction's id, its new name and
# its operands' new names (``None``: kept): renaming one instruction alike in
# two programs (two orders of a graph whose copies one pass eliminates alike)
# gives one object, so that the programs' identity keys (``identity_key``) and
# what is kept by them (verdicts, pass results) agree. Cleared when full.
_RENAMED: dict[tuple, tuple["Instr", "Instr"]] = memos.kept({})
_RENAMED_KEPT = 2048


@dataclass(frozen=True)
class Save:
    """A graph ``save`` as lowering saw it: node ``node`` saves into placeholder
    ``target`` the value computed by node ``producer`` (found through views;
    ``None`` when the saved value is a module buffer).

    It tells who may write the placeholder (IR-4): the ``copy`` named ``node``,
    or, after copy elimination, the ``kernel`` named ``producer``.
    """

    node: str
    target: str
    producer: str | None = None


@dataclass(frozen=True)
class Program:
    """A lowered program. ``offsets`` (activation -> arena byte offset) and
    ``peak_bytes`` are set by the allocator; ``schedule`` is the node order it
    was lowered from; ``saves`` records the graph's saves (see ``Save``)."""

    name: str
    buffers: tuple[Buffer, ...]
    instrs: tuple[Instr, ...]
    schedule: tuple[str, ...] = ()
    offsets: tuple[tuple[str, int], ...] = ()
    peak_bytes: int | None = None
    passes: tuple[str, ...] = field(default=(), compare=False)
    saves: tuple[Save, ...] = ()

    @cached_property
    def buffer_by_name(self) -> dict[str, Buffer]:
        return {b.name: b for b in self.buffers}

    @cached_property
    def offset_of(self) -> dict[str, int]:
        return dict(self.offsets)

    @cached_property
    def placeholder_writers(self) -> dict[str, tuple[tuple[Opcode, str], ...]]:
        """Who may write each saved placeholder (IR-4), as ``(opcode, instruction
        name)``: its save's ``copy``, then the ``kernel`` producing the saved value
        (which writes it once copy elimination has removed the copy). A
        placeholder not listed is never saved: nothing may write it."""
        out: dict[str, list[tuple[Opcode, str]]] = {}
        for save in self.saves:
            allowed = out.setdefault(save.target, [])
            allowed.append((Opcode.COPY, save.node))
            if save.producer is not None:
                allowed.append((Opcode.KERNEL, save.producer))
        return {target: tuple(allowed) for target, allowed in out.items()}

    def arena_bytes(self) -> int:
        """``peak_bytes`` of an allocated program, for running it: ``UsageError``
        when it is not allocated or ``peak_bytes`` is not a whole number of bytes,
        ``LimitExceeded`` above the bytes limit (``REFC_MAX_BYTES``)."""
        peak = self.peak_bytes
        if peak is None:
            raise UsageError(f"program {self.name!r} is not allocated (run refcompiler.allocator.allocate first)")
        if type(peak) is not int or peak < 0:
            raise UsageError(f"program {self.name!r}: peak_bytes is {limits.shown(peak)}, not a whole number of bytes")
        limits.check("bytes", peak, f"program {self.name!r} arena")
        return peak

    def __getstate__(self) -> dict[str, object]:
        """The fields only: what is kept on the object beside them (derived
        tables, the analysis, the verifier's verdict) is made again on demand."""
        return {f: self.__dict__[f] for f in _PROGRAM_FIELDS}

    def with_instrs(self, instrs: tuple[Instr, ...] | list[Instr]) -> "Program":
        """A new program with other instructions; allocation results are dropped.
        ``self`` when there are none to drop and ``instrs`` are its own
        instruction objects in its order (a pass that moved nothing): what is
        kept on it (the analysis, the verifier's verdict) stays true."""
        instrs = tuple(instrs)
        mine = self.instrs
        if not self.offsets and self.peak_bytes is None and len(instrs) == len(mine) and all(map(operator.is_, instrs, mine)):  # lengths equal
            return self
        return self._copy(instrs=instrs, offsets=(), peak_bytes=None)

    def with_passes(self, passes: tuple[str, ...]) -> "Program":
        """The same program with another record of the passes run."""
        return self._copy(passes=passes)

    def with_schedule(self, schedule: tuple[str, ...], passes: tuple[str, ...]) -> "Program":
        """The same program with another order and record of the passes run
        (the fields that only say where it came from)."""
        return self._copy(schedule=schedule, passes=passes)

    def with_allocation(self, offsets: tuple[tuple[str, int], ...], peak_bytes: int) -> "Program":
        """The same program with its activations' arena offsets and the arena's size."""
        new = self._copy(offsets=offsets, peak_bytes=peak_bytes)
        if type(new) is Program:  # ``offset_of`` made now, without ``cached_property``'s lock: MEM-1 asks at once
            new.__dict__["offset_of"] = dict(offsets)
        return new

    def _copy(self, **changes: object) -> "Program":
        """``dataclasses.replace(self, **changes)``, built directly for a plain
        ``Program`` (``replace`` inspects the fields on every call, and a pipeline
        makes many programs). The tables derived from ``buffers`` and ``saves``
        alone, and the analysis of ``instrs`` and ``buffers``, are handed on
        when those stay the same objects: they are functions of them, and
        programs are immutable; so is the IR verifier's verdict when only
        ``passes`` changes. A keyword that is no field of ``Program`` is a
        ``TypeError`` naming it, as it is for ``replace``."""
        if type(self) is not Program:  # a subclass (a user's pass) keeps its own fields
            return replace(self, **changes)  # type: ignore[arg-type]
        if not changes.keys() <= _PROGRAM_FIELD_SET:  # else a misspelt field would become a stray attribute
            unknown = sorted(changes.keys() - _PROGRAM_FIELD_SET)
            raise TypeError(f"Program has no field {unknown[0]!r}")
        known = self.__dict__
        fields = {f: known[f] for f in _PROGRAM_FIELDS}
        fields.update(changes)
        new = _plain(Program, fields)
        if new.buffers is self.buffers and "buffer_by_name" in known:
            new.__dict__["buffer_by_name"] = known["buffer_by_name"]
        if new.saves is self.saves and "placeholder_writers" in known:
            new.__dict__["placeholder_writers"] = known["placeholder_writers"]
        if changes.keys() <= {"passes"} and "_valid_under" in known:
            new.__dict__["_valid_under"] = known["_valid_under"]  # ``refcompiler.ir_verifier``: ``passes`` is no part of it
        if new.instrs is self.instrs and new.buffers is self.buffers and "_analysis" in known:
            new.__dict__["_analysis"] = known["_analysis"]  # ``refcompiler.ir_analysis.analyze``: reads only those two
        return new


_PROGRAM_FIELDS = tuple(f.name for f in dataclass_fields(Program))
_PROGRAM_FIELD_SET = frozenset(_PROGRAM_FIELDS)


def _plain(cls: type[_T], fields: dict[str, object]) -> _T:
    """``cls(**fields)`` for one of the frozen dataclasses above, built directly:
    their ``__init__`` sets each field through ``object.__setattr__``, several
    times the cost of filling the instance's ``__dict__``, and none of them
    checks or derives anything on construction. ``fields``: every field, each
    once (the dict becomes the instance's own)."""
    new = object.__new__(cls)
    new.__dict__.update(fields)
    return new


def identity_key(program: Program) -> tuple | None:
    """A key that two plain programs share when every field but ``schedule`` and
    ``passes`` holds the same objects (the instructions one by one): then each is
    a copy of the other up to where it came from, and a function of the program
    that reads neither field (the IR verifier, the built-in passes, the
    allocator) gives both one answer. Ids stand for objects: the key is only
    good while a program holding them is kept (a table keyed by it keeps the
    program with the entry). ``None`` for a subclass (a user's pass's), whose
    own fields it would miss."""
    if type(program) is not Program:
        return None
    known = program.__dict__
    found = known.get("_identity_key")
    if found is None:  # made once per object (``_copy`` hands on none: the fields change)
        found = known["_identity_key"] = (program.name, id(program.buffers), id(program.saves), program.offsets, program.peak_bytes, *map(id, program.instrs))
    return found


def entry_saves(program: Program) -> set[str]:
    """The saves of a module buffer's value (``Save.producer`` None), by node:
    their copies read a placeholder's value at entry, which is gone once
    anything has written the placeholder (IR-4)."""
    return {save.node for save in program.saves if save.producer is None}


class IdentityTable:
    """Results kept by a key of ids (a program's ``identity_key``, a key holding
    it, a graph's ``id``) and the context they were made under (a swap table or
    ``verdict_context``, compared by identity): at most ``size`` of them,
    emptied when full (a table of size 1 keeps the last one). Each entry keeps
    the object its key was made from (a program, a graph), so that the ids in
    the key stay that object's while it lives."""

    __slots__ = ("size", "entries")

    def __init__(self, size: int) -> None:
        self.size = size
        self.entries: dict[Hashable, tuple[object, object, object]] = {}

    def get(self, key: Hashable, context: object) -> tuple[object, object] | None:
        """(the object kept, the result) under ``key`` and ``context``, or ``None``."""
        found = self.entries.get(key)
        return None if found is None or found[0] is not context else (found[1], found[2])

    def result(self, key: Hashable, context: object) -> object:
        """The result kept under ``key`` and ``context``, or ``None`` (for a
        table whose results are never ``None``: no pair is made per hit)."""
        found = self.entries.get(key)
        return found[2] if found is not None and found[0] is context else None

    def put(self, key: Hashable, context: object, kept: object, result: object) -> None:
        if len(self.entries) >= self.size:
            self.entries.clear()
        self.entries[key] = (context, kept, result)

    def clear(self) -> None:
        self.entries.clear()


def signature_problem(instr: Instr) -> str | None:
    """What is wrong with the operand kinds of a ``copy`` or ``kernel`` (IR-1), or
    ``None``: a copy takes ``@out`` destination, ``@in`` source; a kernel has an op
    and takes its results ``@out``, its inputs ``@in`` and its state ``@inout``, in
    that order and in the numbers its spec says. Types are the caller's to check."""
    operands = instr.operands
    if instr.opcode is _COPY:
        ok = len(operands) == 2 and operands[0].kind is _OUT and operands[1].kind is _IN
        return None if ok else "a copy takes @out destination, @in source"
    kinds = [o.kind for o in operands]
    if instr.op is None:
        return "a kernel without an op"
    spec = spec_of(instr.op)
    n_out, n_in, n_state = (kinds.count(k) for k in (OperandKind.OUT, OperandKind.IN, OperandKind.INOUT))
    expected = [OperandKind.OUT] * n_out + [OperandKind.IN] * n_in + [OperandKind.INOUT] * n_state
    inputs_ok = n_in >= 1 if spec.variadic else n_in == len(spec.inputs)
    if kinds == expected and n_out == len(spec.results) and inputs_ok and n_state == len(spec.state):
        return None
    n_inputs = "1 or more" if spec.variadic else len(spec.inputs)
    return f"{spec.name} takes {len(spec.results)} @out, {n_inputs} @in, {len(spec.state)} @inout, in that order"
