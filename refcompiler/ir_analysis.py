"""Plain analyses of the low-level IR (DESIGN §5), shared by the IR verifier,
the IR passes and the allocator.

Vocabulary used throughout:

- a *data instruction* is a ``kernel`` or a ``copy``: the only instructions
  that read or write memory through their operands;
- the *origin* of a name is what a chain of ``view``s bottoms out at: an
  activation (defined by an ``alloc``) or a module buffer;
- two names *alias* when they have the same origin; a read or write through a
  view is a read or write of its origin;
- a name is *used* by an instruction when it is one of the instruction's data
  operands or the source of a ``view``; ``alloc`` and ``dealloc`` define and
  end a name, they do not use it.

Every function takes the program as it is and never raises on malformed IR
(an unresolved name is its own origin; a view cycle stops where it repeats):
the verifier, not the analyses, decides what is legal.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterable

from specs import TensorType

from refcompiler.ir import BufferKind, Instr, Opcode, Program

__all__ = [
    "is_data",
    "defined_name",
    "used_names",
    "read_names",
    "written_names",
    "view_sources",
    "origin",
    "origin_map",
    "aliases",
    "name_types",
    "activations",
    "alloc_index",
    "dealloc_index",
    "uses_of",
    "readers",
    "writers",
    "first_use",
    "last_use",
    "live_ranges",
    "buffer_kind",
    "rename",
]


def is_data(instr: Instr) -> bool:
    """A kernel or a copy: an instruction whose operands are memory accesses."""
    return instr.opcode in (Opcode.KERNEL, Opcode.COPY)


def defined_name(instr: Instr) -> str | None:
    """The name an ``alloc`` or ``view`` defines; ``None`` for other instructions."""
    if instr.opcode in (Opcode.ALLOC, Opcode.VIEW):
        return instr.name
    return None


def used_names(instr: Instr) -> tuple[str, ...]:
    """Names the instruction uses: data operands, or a view's source."""
    if is_data(instr) or instr.opcode is Opcode.VIEW:
        return tuple(o.name for o in instr.operands)
    return ()


def read_names(instr: Instr) -> tuple[str, ...]:
    """Names a data instruction reads (``@in`` and ``@inout`` operands)."""
    if not is_data(instr):
        return ()
    return tuple(o.name for o in instr.operands if o.kind.reads)


def written_names(instr: Instr) -> tuple[str, ...]:
    """Names a data instruction writes (``@out`` and ``@inout`` operands)."""
    if not is_data(instr):
        return ()
    return tuple(o.name for o in instr.operands if o.kind.writes)


def view_sources(program: Program) -> dict[str, str]:
    """Each view's name -> the name it is a view of (its single ``@in`` operand)."""
    out: dict[str, str] = {}
    for instr in program.instrs:
        if instr.opcode is Opcode.VIEW and instr.operands:
            out[instr.name] = instr.operands[0].name
    return out


def _follow(sources: dict[str, str], name: str) -> str:
    seen = {name}
    while name in sources and sources[name] not in seen:
        name = sources[name]
        seen.add(name)
    return name


def origin(program: Program, name: str) -> str:
    """The activation or module buffer at the bottom of ``name``'s chain of views."""
    return _follow(view_sources(program), name)


def origin_map(program: Program) -> dict[str, str]:
    """Every name the program defines or refers to -> its origin."""
    sources = view_sources(program)
    names: set[str] = set(program.buffer_by_name)
    for instr in program.instrs:
        names.add(instr.name)
        names.update(o.name for o in instr.operands)
    return {n: _follow(sources, n) for n in names}


def aliases(program: Program, name: str) -> frozenset[str]:
    """Every name that shares memory with ``name`` (the same origin), ``name`` included."""
    sources = view_sources(program)
    root = _follow(sources, name)
    # only views differ from their origin, so the origin and its views are all
    return frozenset({name, root} | {v for v in sources if _follow(sources, v) == root})


def name_types(program: Program) -> dict[str, TensorType]:
    """The type of every module buffer, activation and view."""
    out = {b.name: b.type for b in program.buffers}
    for instr in program.instrs:
        if instr.opcode in (Opcode.ALLOC, Opcode.VIEW) and instr.type is not None:
            out.setdefault(instr.name, instr.type)
    return out


def activations(program: Program) -> list[str]:
    """Names defined by an ``alloc``, in program order, each once."""
    return list(dict.fromkeys(i.name for i in program.instrs if i.opcode is Opcode.ALLOC))


def buffer_kind(program: Program, name: str) -> BufferKind | None:
    """The kind of storage behind ``name`` (through views); ``None`` if it resolves to nothing."""
    root = origin(program, name)
    buffer = program.buffer_by_name.get(root)
    if buffer is not None:
        return buffer.kind
    if root in activations(program):
        return BufferKind.ACTIVATION
    return None


def _index_of(program: Program, opcode: Opcode, name: str) -> int | None:
    for i, instr in enumerate(program.instrs):
        if instr.opcode is opcode and instr.name == name:
            return i
    return None


def alloc_index(program: Program, name: str) -> int | None:
    """Index of the (first) ``alloc`` of ``name``."""
    return _index_of(program, Opcode.ALLOC, name)


def dealloc_index(program: Program, name: str) -> int | None:
    """Index of the (first) ``dealloc`` of ``name``."""
    return _index_of(program, Opcode.DEALLOC, name)


def _touching(program: Program, names: Iterable[str], pick: Callable[[Instr], tuple[str, ...]]) -> list[int]:
    wanted = set(names)
    return [i for i, instr in enumerate(program.instrs) if wanted.intersection(pick(instr))]


def uses_of(program: Program, name: str) -> list[int]:
    """Indices of instructions that use ``name`` or any alias of it (views included)."""
    return _touching(program, aliases(program, name), used_names)


def readers(program: Program, name: str) -> list[int]:
    """Indices of data instructions that read ``name`` or any alias of it."""
    return _touching(program, aliases(program, name), read_names)


def writers(program: Program, name: str) -> list[int]:
    """Indices of data instructions that write ``name`` or any alias of it."""
    return _touching(program, aliases(program, name), written_names)


def first_use(program: Program, name: str) -> int | None:
    """Index of the first instruction that uses ``name`` or an alias; ``None`` if unused."""
    found = uses_of(program, name)
    return found[0] if found else None


def last_use(program: Program, name: str) -> int | None:
    """Index of the last instruction that uses ``name`` or an alias; ``None`` if unused."""
    found = uses_of(program, name)
    return found[-1] if found else None


def live_ranges(program: Program) -> dict[str, tuple[int, int]]:
    """Each activation -> (index of its ``alloc``, index of its ``dealloc``), both inclusive.

    The ``alloc`` and ``dealloc`` instructions themselves touch the region (the
    interpreter poisons it), so an activation owns its bytes from one to the
    other. A missing ``dealloc`` counts as live to the end of the program.
    """
    start: dict[str, int] = {}
    end: dict[str, int] = {}
    for i, instr in enumerate(program.instrs):
        if instr.opcode is Opcode.ALLOC:
            start.setdefault(instr.name, i)
        elif instr.opcode is Opcode.DEALLOC:
            end.setdefault(instr.name, i)
    last = len(program.instrs)
    return {name: (s, end.get(name, last)) for name, s in start.items()}


def rename(instr: Instr, old: str, new: str) -> Instr:
    """``instr`` with every operand named ``old`` renamed to ``new`` (and its own name,
    for ``alloc``/``dealloc``/``view``)."""
    renames_self = instr.opcode in (Opcode.ALLOC, Opcode.DEALLOC, Opcode.VIEW) and instr.name == old
    if not renames_self and all(o.name != old for o in instr.operands):
        return instr
    operands = tuple(replace(o, name=new) if o.name == old else o for o in instr.operands)
    return replace(instr, operands=operands, name=new if renames_self else instr.name)
