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

Everything is computed once per program, in one scan (``analyze``, memoized
per program object: programs are immutable), so that each query costs O(1) or
the size of its answer and a pass over the whole program stays linear. Every
function takes the program as it is and never raises on malformed IR (an
unresolved name is its own origin; a view cycle stops where it repeats): the
verifier, not the analyses, decides what is legal.
"""

from __future__ import annotations

import weakref
from typing import Mapping

from specs import TensorType

from refcompiler.ir import Instr, Opcode, Operand, OperandKind, Program

__all__ = [
    "Analysis",
    "analyze",
    "give_analysis",
    "follow_views",
    "is_data",
    "used_names",
    "read_names",
    "written_names",
    "view_sources",
    "origin",
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
]


def is_data(instr: Instr) -> bool:
    """A kernel or a copy: an instruction whose operands are memory accesses."""
    return instr.opcode is Opcode.KERNEL or instr.opcode is Opcode.COPY


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


def follow_views(sources: Mapping[str, str], name: str) -> str:
    """The one definition of following a chain of views: from ``name`` through
    ``sources`` (view -> the name it is a view of) to the first name that is no
    view, or to where the chain would repeat (a cycle: malformed IR)."""
    if name not in sources:
        return name
    seen = {name}
    while name in sources and sources[name] not in seen:
        name = sources[name]
        seen.add(name)
    return name


class Analysis:
    """Def-use and view-origin facts of one program, from one scan.

    Index lists are in program order, each index once. Per origin: the
    instructions that use, read or write it or any of its aliases. Per name:
    the data instructions that read it by that very name.
    """

    # The tables of instruction indices (by origin; ``direct_reads`` by name),
    # filled by ``_uses_in_order``; ``moved`` moves each one's indices.
    _INDEX_TABLES = ("uses", "reads", "writes", "direct_reads")

    def __init__(self, program: Program):
        self._define(program)
        self._origin: dict[str, str] = {}
        self.uses: dict[str, list[int]] = {}
        self.reads: dict[str, list[int]] = {}
        self.writes: dict[str, list[int]] = {}
        self.direct_reads: dict[str, list[int]] = {}
        self._uses_in_order()
        self.members: dict[str, set[str]] = {}  # origin -> its views
        for view in self.sources:
            self.members.setdefault(self.origin(view), set()).add(view)
        self._runs: tuple[list[int], list[int]] | None = None  # made on first use (the allocator's)

    def _define(self, program: Program) -> None:
        """The facts that allocs and deallocs change (``moved`` makes them anew):
        the program, its instructions and the definitions of names in them."""
        self.instrs = program.instrs
        self._program = weakref.ref(program)
        self.sources: dict[str, str] = {}  # view -> its source (a later definition wins)
        self.types: dict[str, TensorType] = {b.name: b.type for b in program.buffers}
        self.allocs: dict[str, int] = {}  # activation -> its first alloc
        self.deallocs: dict[str, int] = {}  # activation -> its first dealloc
        self._definitions()

    def _definitions(self) -> None:
        sources, types, allocs, deallocs = self.sources, self.types, self.allocs, self.deallocs
        view_op, alloc, dealloc = Opcode.VIEW, Opcode.ALLOC, Opcode.DEALLOC  # locals: an enum class's attribute is slow (3.11)
        for i, instr in enumerate(self.instrs):
            opcode = instr.opcode
            if opcode is view_op:
                if instr.operands:
                    sources[instr.name] = instr.operands[0].name
            elif opcode is alloc:
                if instr.name not in allocs:
                    allocs[instr.name] = i
            elif opcode is dealloc:
                if instr.name not in deallocs:
                    deallocs[instr.name] = i
                continue
            else:
                continue
            if instr.type is not None and instr.name not in types:
                types[instr.name] = instr.type

    def moved(self, program: Program) -> "Analysis | None":
        """The analysis of ``program`` (what ``Analysis(program)`` computes) when
        its instructions other than allocs and deallocs are this analysis's, the
        same objects in the same order (``None`` otherwise): allocs and deallocs
        moved, added or dropped. Allocs and deallocs are no uses, so the use
        tables are this one's with their indices moved; the definitions are
        scanned anew (no operands), and the views, hence the origins, are the same.

        The attributes are ``__init__``'s, each handled as its kind needs: the
        definitions made anew (``_define``, shared with ``__init__``), the index
        tables (``_INDEX_TABLES``) moved, the origins and views copied, the
        opcode runs left to be made. (A test compares every attribute of a moved
        analysis with a fresh one's, so one added to ``__init__`` and not here fails.)"""
        kept = (Opcode.ALLOC, Opcode.DEALLOC)
        mine = [i for i, instr in enumerate(self.instrs) if instr.opcode not in kept]
        theirs = [i for i, instr in enumerate(program.instrs) if instr.opcode not in kept]
        if len(mine) != len(theirs) or any(self.instrs[a] is not program.instrs[b] for a, b in zip(mine, theirs)):
            return None
        at = dict(zip(mine, theirs))
        new = Analysis.__new__(Analysis)
        new._define(program)
        new._origin = dict(self._origin)
        for table in Analysis._INDEX_TABLES:
            setattr(new, table, {name: [at[i] for i in found] for name, found in getattr(self, table).items()})
        new.members = {root: set(views) for root, views in self.members.items()}
        new._runs = None
        return new

    @property
    def program(self) -> Program | None:
        """The program this analysis was made from (``None`` once it is gone)."""
        return self._program()

    def _uses_in_order(self) -> None:
        """Record the uses of every data instruction and view, in program order
        (one loop, its table updates inlined: it runs once per program a pass makes)."""
        sources, origin = self.sources, self._origin
        uses, reads, writes, direct = self.uses, self.reads, self.writes, self.direct_reads
        alloc, dealloc, view_op, out_kind, in_kind = Opcode.ALLOC, Opcode.DEALLOC, Opcode.VIEW, OperandKind.OUT, OperandKind.IN
        for i, instr in enumerate(self.instrs):
            opcode = instr.opcode
            if opcode is alloc or opcode is dealloc:
                continue
            view = opcode is view_op
            for operand in instr.operands:
                name = operand.name
                root = origin.get(name)
                if root is None:
                    root = origin[name] = follow_views(sources, name) if name in sources else name
                # each table's lists hold each index once: a repeat is the last one
                found = uses.get(root)
                if found is None:
                    uses[root] = [i]
                elif found[-1] != i:
                    found.append(i)
                if view:
                    continue
                kind = operand.kind
                if kind is not out_kind:
                    found = reads.get(root)
                    if found is None:
                        reads[root] = [i]
                    elif found[-1] != i:
                        found.append(i)
                    found = direct.get(name)
                    if found is None:
                        direct[name] = [i]
                    elif found[-1] != i:
                        found.append(i)
                if kind is not in_kind:
                    found = writes.get(root)
                    if found is None:
                        writes[root] = [i]
                    elif found[-1] != i:
                        found.append(i)

    def origin(self, name: str) -> str:
        """The activation or module buffer at the bottom of ``name``'s chain of views."""
        found = self._origin.get(name)
        if found is None:
            found = self._origin[name] = follow_views(self.sources, name)
        return found

    def aliases(self, name: str) -> frozenset[str]:
        """Every name with ``name``'s origin (``name`` and the origin included)."""
        root = self.origin(name)
        return frozenset({name, root} | self.members.get(root, set()))

    def uses_of(self, name: str) -> list[int]:
        return self.uses.get(self.origin(name), [])

    def readers(self, name: str) -> list[int]:
        return self.reads.get(self.origin(name), [])

    def writers(self, name: str) -> list[int]:
        return self.writes.get(self.origin(name), [])

    def run_start(self, index: int) -> int:
        """Index of the first instruction of the run of same-opcode instructions holding ``index``."""
        return self._opcode_runs()[0][index]

    def run_end(self, index: int) -> int:
        """Index of the last instruction of the run of same-opcode instructions holding ``index``."""
        return self._opcode_runs()[1][index]

    def _opcode_runs(self) -> tuple[list[int], list[int]]:
        if self._runs is None:
            self._runs = _opcode_runs(self.instrs)
        return self._runs


def _opcode_runs(instrs: tuple[Instr, ...]) -> tuple[list[int], list[int]]:
    start = list(range(len(instrs)))
    for i in range(1, len(instrs)):
        if instrs[i].opcode is instrs[i - 1].opcode:
            start[i] = start[i - 1]
    end = list(range(len(instrs)))
    for i in reversed(range(len(instrs) - 1)):
        if instrs[i].opcode is instrs[i + 1].opcode:
            end[i] = end[i + 1]
    return start, end


# Programs are immutable, so an analysis is valid for as long as its program
# lives, and for every program with the same instructions and buffers (all it
# reads). It is kept on the program object itself (``_ANALYSIS`` in its
# ``__dict__``), which ``Program``'s derived copies with the same instructions
# and buffers (``with_passes``, ``with_allocation``) hand on; a program built
# anew (a pass's result) gets its own. The analysis refers back to its program
# only weakly, so that the two form no reference cycle.
_ANALYSIS = "_analysis"


def analyze(program: Program) -> Analysis:
    """The analysis of ``program``, computed on first request and kept with the
    program object (and the copies of it that keep its instructions and buffers)."""
    try:
        found = program.__dict__.get(_ANALYSIS)
    except AttributeError:  # a user's program type without a __dict__
        return Analysis(program)
    if found is None:
        found = program.__dict__[_ANALYSIS] = Analysis(program)
    return found


def give_analysis(program: Program, facts: Analysis | None) -> None:
    """Keep ``facts`` as ``program``'s analysis (``analyze`` returns it), unless
    it has one already or ``facts`` is ``None``. ``facts`` must be what
    ``Analysis(program)`` computes."""
    if facts is None:
        return
    try:
        program.__dict__.setdefault(_ANALYSIS, facts)
    except AttributeError:  # a user's program type without a __dict__
        pass


def view_sources(program: Program) -> dict[str, str]:
    """Each view's name -> the name it is a view of (its single ``@in`` operand;
    a later definition wins). From the program's analysis if it has one, else
    from a scan of the views alone (cheaper than a whole analysis)."""
    found = getattr(program, "__dict__", {}).get(_ANALYSIS)
    if found is not None:
        return dict(found.sources)
    return {i.name: i.operands[0].name for i in program.instrs if i.opcode is Opcode.VIEW and i.operands}


def origin(program: Program, name: str) -> str:
    """The activation or module buffer at the bottom of ``name``'s chain of views."""
    return analyze(program).origin(name)


def aliases(program: Program, name: str) -> frozenset[str]:
    """Every name that shares memory with ``name`` (the same origin), ``name`` included."""
    return analyze(program).aliases(name)


def name_types(program: Program) -> dict[str, TensorType]:
    """The type of every module buffer, activation and view (do not modify)."""
    return analyze(program).types


def activations(program: Program) -> list[str]:
    """Names defined by an ``alloc``, in program order, each once."""
    return list(analyze(program).allocs)


def alloc_index(program: Program, name: str) -> int | None:
    """Index of the (first) ``alloc`` of ``name``."""
    return analyze(program).allocs.get(name)


def dealloc_index(program: Program, name: str) -> int | None:
    """Index of the (first) ``dealloc`` of ``name``."""
    return analyze(program).deallocs.get(name)


def uses_of(program: Program, name: str) -> list[int]:
    """Indices of instructions that use ``name`` or any alias of it (views included)."""
    return list(analyze(program).uses_of(name))


def readers(program: Program, name: str) -> list[int]:
    """Indices of data instructions that read ``name`` or any alias of it."""
    return list(analyze(program).readers(name))


def writers(program: Program, name: str) -> list[int]:
    """Indices of data instructions that write ``name`` or any alias of it."""
    return list(analyze(program).writers(name))


def first_use(program: Program, name: str) -> int | None:
    """Index of the first instruction that uses ``name`` or an alias; ``None`` if unused."""
    found = analyze(program).uses_of(name)
    return found[0] if found else None


def last_use(program: Program, name: str) -> int | None:
    """Index of the last instruction that uses ``name`` or an alias; ``None`` if unused."""
    found = analyze(program).uses_of(name)
    return found[-1] if found else None


def live_ranges(program: Program) -> dict[str, tuple[int, int]]:
    """Each activation -> (index of its ``alloc``, index of its ``dealloc``), both inclusive.

    The ``alloc`` and ``dealloc`` instructions themselves touch the region (the
    interpreter poisons it), so an activation owns its bytes from one to the
    other. A missing ``dealloc`` counts as live to the end of the program.
    """
    facts = analyze(program)
    last = len(program.instrs)
    return {name: (s, facts.deallocs.get(name, last)) for name, s in facts.allocs.items()}
