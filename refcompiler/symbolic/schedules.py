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

from refcompiler.allocator import allocate
from refcompiler.driver import Compiled, compile_graph
from refcompiler.lowering import lower
from refcompiler.passes import resolve_pipeline, run_pipeline
from refcompiler.graph import Graph
from refcompiler.ir import Opcode, Program
from refcompiler.ir_text import print_program
from refcompiler.proofs import Verdict
from refcompiler.proofs.enumerate import all_legal_orders
from refcompiler.symbolic.validate import DEFAULT_MAX_TERMS, DEFAULT_TIMEOUT, Validation, scheduled_graph, symbolic_reference, validate_compiled

__all__ = ["AllSchedules", "validate_all_schedules", "canonical_text", "canonical_key", "DEFAULT_ORDER_LIMIT"]

DEFAULT_ORDER_LIMIT = 20_000


@dataclass(frozen=True)
class AllSchedules:
    """``orders``: legal orders covered; ``enumerated_all``: no legal order was
    left out by ``limit``; ``programs``: distinct programs validated;
    ``verdict``: proved only if every legal order was covered and its program
    proved; inconclusive when the limit left orders out (those covered are
    proved) or a program was; ``failing``: the first order whose program was
    not proved, and its validation."""

    verdict: Verdict
    orders: int
    enumerated_all: bool
    programs: int
    limit: int
    failing_order: tuple[str, ...] | None = None
    failing: Validation | None = None
    seconds: float = 0.0

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
    ``%``-name) numbered by first appearance. Names that are not a whole
    ``%``-name stay as they are, so the key never equates programs the text
    tells apart; ``tests/refcompiler/symbolic/test_schedules.py`` checks that
    the two agree on compiled programs."""
    names: dict[str, int] = {}

    def r(name: str) -> object:
        return names.setdefault(name, len(names)) if _renamed(name) else name

    allocs = {i.name for i in program.instrs if i.opcode is Opcode.ALLOC}
    offsets = program.offset_of
    header = (
        program.passes,
        program.peak_bytes,
        program.buffers,
        tuple((r(v.node), r(v.target), None if v.producer is None else r(v.producer)) for v in program.saves),
        tuple((r(n), off) for n, off in program.offsets if n not in allocs),
    )
    body = tuple(
        (
            i.opcode,
            r(i.name),
            i.type,
            i.op,
            tuple((o.kind, r(o.name)) for o in i.operands),
            repr(i.attrs) if i.attrs else None,
            offsets.get(i.name) if i.opcode is Opcode.ALLOC else None,
        )
        for i in program.instrs
    )
    return header, body


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
) -> AllSchedules:
    """Validate ``pipeline``'s program for up to ``limit`` legal orders of ``graph``.

    ``timeout`` bounds each Z3 call. The orders are those of the graph the
    compiler schedules (with the copies ``break_save_cycles`` adds, if any)."""
    start = time.monotonic()
    first = compile_graph(graph, pipeline=pipeline)
    scheduled = scheduled_graph(first)
    passes = resolve_pipeline(pipeline)
    reference = symbolic_reference(graph, runs=runs, max_terms=max_terms)  # the same for every order
    seen: dict[str, Validation] = {}
    count, enumerated_all = 0, True
    for k, order in enumerate(all_legal_orders(scheduled, limit=limit + 1)):
        if k >= limit:
            enumerated_all = False
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
    return AllSchedules(verdict, count, enumerated_all, len(seen), limit, seconds=time.monotonic() - start)
