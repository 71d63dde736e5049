"""Validation over every legal schedule, each distinct program once.

``validate_all_schedules(graph, pipeline=...)`` enumerates the legal orders of
the graph the compiler schedules (after ``dce`` and ``break_save_cycles``,
``refcompiler.proofs.enumerate``), at most ``limit`` of them, compiles each,
and validates each distinct program once: two orders whose programs have the
same canonical text (``canonical_text``: the IR text without its schedule
line, values renamed by first appearance) share one proof. It stops at the
first order whose program is not proved. ``complete`` is true only when every
legal order was enumerated and its program proved.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from functools import lru_cache

from refcompiler import memos
from refcompiler.allocator import allocate
from refcompiler.driver import Compiled, compile_graph
from refcompiler.lowering import lower
from refcompiler.passes import resolve_pipeline, run_pipeline
from refcompiler.graph import Graph
from refcompiler.ir import IdentityTable, Instr, Opcode, Program, Save, identity_key
from refcompiler.ir_text import print_program
from refcompiler.proofs import Verdict
from refcompiler.proofs.enumerate import all_legal_orders
from refcompiler.symbolic.defaults import DEFAULT_MAX_TERMS, DEFAULT_ORDER_LIMIT, DEFAULT_TIMEOUT
from refcompiler.symbolic.validate import Validation, scheduled_graph, symbolic_reference, validate_compiled

__all__ = ["AllSchedules", "validate_all_schedules", "canonical_text", "canonical_key", "DEFAULT_ORDER_LIMIT"]


@dataclass(frozen=True)
class AllSchedules:
    """``orders``: legal orders covered; ``enumerated_all``: no legal order was
    left out by ``limit`` or by the time limit (``out_of_time``: it was the
    time); ``programs``: distinct programs validated; ``verdict``: proved only
    if every legal order was covered and its program proved; inconclusive when
    a limit left orders out (those covered are proved) or a program was;
    ``failing``: the first order whose program was not proved, and its validation."""

    verdict: Verdict
    orders: int
    enumerated_all: bool
    programs: int
    limit: int
    failing_order: tuple[str, ...] | None = None
    failing: Validation | None = None
    seconds: float = 0.0
    out_of_time: bool = False

    @property
    def complete(self) -> bool:
        return self.verdict is Verdict.PROVED


_VALUE = re.compile(r"%[A-Za-z0-9_.:\-]+")


def canonical_text(program: Program) -> str:
    """The program's IR text without the schedule line, activations and views
    renamed ``%v0, %v1...`` in order of first appearance (so programs equal up
    to renaming have one text)."""
    lines = [ln for ln in print_program(program).splitlines() if not ln.startswith(("schedule ", "program "))]
    names: dict[str, str] = {}

    def rename(m: re.Match[str]) -> str:
        return names.setdefault(m.group(0), f"%v{len(names)}")

    return "\n".join(_VALUE.sub(rename, ln) for ln in lines)


@lru_cache(maxsize=8192)
def _renamed(name: str) -> bool:
    """Whether ``canonical_text`` renames ``name``: a whole ``%``-name."""
    return name.startswith("%") and _VALUE.fullmatch(name) is not None


def canonical_key(program: Program) -> tuple:
    """A hashable key such that programs with one key have one
    ``canonical_text``, made without printing (a tenth of the cost): every field
    the text shows, in order, with each name the text would rename (a whole
    ``%``-name) left out of its place (``_SLOT``) and numbered by first
    appearance in a sequence of its own. Names that are not a whole
    ``%``-name stay as they are, so the key never equates programs the text
    tells apart; ``tests/refcompiler/symbolic/test_schedules.py`` checks that
    the two agree on compiled programs. An instruction's part is made once
    per instruction object (``_instr_part``): the programs of a graph share most;
    it and the buffers are ``_Hashed`` (the key is hashed for each set it is looked up in),
    and the saves' part is made once per tuple of saves (``_saves_part``).
    The key of a program holding the same objects as one keyed recently
    (``identity_key``: another order that compiled alike), with the same
    passes, is that one's: the key shows no schedule."""
    same = identity_key(program)
    if same is None:
        return _canonical_key(program)
    same = (program.passes, same)
    found = _KEYS.result(same, None)
    if found is not None:
        return found  # type: ignore[return-value]  # a key
    key = _canonical_key(program)
    _KEYS.put(same, None, program, key)
    return key


# Keys ``canonical_key`` made recently, by the program's passes and ``identity_key``
# (a function of the program alone: no context).
_KEYS = memos.kept(IdentityTable(64))


def _canonical_key(program: Program) -> tuple:
    """``canonical_key`` made anew."""
    alloc = Opcode.ALLOC  # a local: an enum class's attribute is slow (3.11)
    allocs = [i.name for i in program.instrs if i.opcode is alloc]
    saves, names = _saves_part(program.saves)
    renamed = list(names)  # the renamed names, in the text's order: the header's, then the body's
    in_allocs = set(allocs)
    moved = tuple((_slot(n, renamed), off) for n, off in program.offsets if n not in in_allocs)
    body = []
    for i in program.instrs:
        fields, instr_names = _instr_part(i)
        body.append(fields)
        renamed.extend(instr_names)
    header = (program.passes, program.peak_bytes, _hashed_buffers(program.buffers), saves, moved)
    number = {n: k for k, n in enumerate(dict.fromkeys(renamed))}  # by first appearance
    return header, tuple(body), tuple(map(program.offset_of.get, allocs)), tuple(map(number.__getitem__, renamed))


_SLOT = -1  # where a renamed name stands in ``canonical_key`` (a name is a ``str``)


def _slot(name: str, renamed: list[str]) -> object:
    """``name`` itself, or ``_SLOT`` with ``name`` added to ``renamed`` when the text renames it."""
    if _renamed(name):
        renamed.append(name)
        return _SLOT
    return name


def _instr_part(i: Instr) -> tuple[tuple, tuple[str, ...]]:
    """An instruction's fields as ``canonical_key`` has them, and its renamed names
    in order; kept per instruction object (the same in every program)."""
    found = _PARTS.get(id(i))
    if found is not None and found[0] is i:
        return found[1]
    names: list[str] = []
    fields = _Hashed((
        i.opcode,
        _slot(i.name, names),
        i.type,
        i.op,
        tuple([(o.kind, _slot(o.name, names)) for o in i.operands]),
        repr(i.attrs) if i.attrs else None,
    ))
    if len(_PARTS) >= 8192:
        _PARTS.clear()
    _PARTS[id(i)] = (i, (fields, tuple(names)))  # the instruction kept: its id is not reused while here
    return fields, tuple(names)


_PARTS: dict[int, tuple] = memos.kept({})


def _saves_part(saves: tuple[Save, ...]) -> tuple[tuple, tuple[str, ...]]:
    """The saves as ``canonical_key`` has them, and their renamed names in
    order; kept per tuple object (one per graph's programs)."""
    found = _SAVES.get(id(saves))
    if found is not None and found[0] is saves:
        return found[1]
    names: list[str] = []
    part = tuple((_slot(v.node, names), _slot(v.target, names), None if v.producer is None else _slot(v.producer, names)) for v in saves)
    if len(_SAVES) >= 1024:
        _SAVES.clear()
    _SAVES[id(saves)] = (saves, (part, tuple(names)))  # the tuple kept: its id is not reused while here
    return part, tuple(names)


_SAVES: dict[int, tuple] = memos.kept({})


def _hashed_buffers(buffers: tuple) -> "_Hashed":
    """``buffers`` ``_Hashed``, kept per tuple object (one per graph's programs)."""
    found = _BUFFERS.get(id(buffers))
    if found is None or found.value is not buffers:
        if len(_BUFFERS) >= 1024:
            _BUFFERS.clear()
        found = _BUFFERS[id(buffers)] = _Hashed(buffers)  # the tuple kept: its id is not reused while here
    return found


_BUFFERS: dict[int, "_Hashed"] = memos.kept({})


class _Hashed:
    """``value`` with its hash computed once; equal to another exactly when the values are equal."""

    __slots__ = ("value", "hash")

    def __init__(self, value: object) -> None:
        self.value, self.hash = value, hash(value)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return self is other or (type(other) is _Hashed and self.hash == other.hash and self.value == other.value)


def _compile_order(first: Compiled, scheduled: Graph, order: tuple[str, ...], passes: list) -> Compiled:
    """``compile_graph`` for a legal ``order`` of ``scheduled`` (what ``first``
    was compiled from): its lowering, pipeline (verified after each pass) and
    allocation, without redoing the order-independent work (verify, dce,
    break_save_cycles, the dependency graph) and the legality check the
    enumeration makes true. A test checks it gives ``compile_graph``'s program."""
    return replace(first, schedule=order, program=allocate(run_pipeline(lower(scheduled, order), passes)))


def validate_all_schedules(
    graph: Graph,
    *,
    pipeline: str = "O0",
    runs: int = 2,
    timeout: float = DEFAULT_TIMEOUT,
    limit: int = DEFAULT_ORDER_LIMIT,
    max_terms: int = DEFAULT_MAX_TERMS,
    seconds: float | None = None,
) -> AllSchedules:
    """Validate ``pipeline``'s program for up to ``limit`` legal orders of ``graph``.

    ``timeout`` bounds each Z3 call; ``seconds`` (``None``: no bound) the time
    after which no further order is started (the result is then inconclusive,
    ``out_of_time``). The orders are those of the graph the compiler schedules
    (with the copies ``break_save_cycles`` adds, if any)."""
    start = time.monotonic()
    first = compile_graph(graph, pipeline=pipeline)
    scheduled = scheduled_graph(first)
    passes = resolve_pipeline(pipeline)
    reference = symbolic_reference(graph, runs=runs, max_terms=max_terms)  # the same for every order
    seen: dict[str, Validation] = {}
    count, enumerated_all, out_of_time = 0, True, False
    for k, order in enumerate(all_legal_orders(scheduled, limit=limit + 1)):
        if k >= limit:
            enumerated_all = False
            break
        if seconds is not None and time.monotonic() - start > seconds:
            enumerated_all, out_of_time = False, True
            break
        count += 1
        compiled = _compile_order(first, scheduled, order, passes)
        text = canonical_text(compiled.program)
        if text not in seen:
            seen[text] = validate_compiled(graph, compiled, runs=runs, timeout=timeout, reference=reference)
        result = seen[text]
        if result.verdict is not Verdict.PROVED:
            return AllSchedules(result.verdict, count, False, len(seen), limit, order, result, time.monotonic() - start)
    # every covered program is proved; the verdict is proved only if every legal order was covered
    verdict = Verdict.PROVED if enumerated_all else Verdict.INCONCLUSIVE
    return AllSchedules(verdict, count, enumerated_all, len(seen), limit, seconds=time.monotonic() - start, out_of_time=out_of_time)
