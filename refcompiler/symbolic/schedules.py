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

from refcompiler.allocator import allocate
from refcompiler.driver import Compiled, compile_graph
from refcompiler.lowering import lower
from refcompiler.passes import resolve_pipeline, run_pipeline
from refcompiler.graph import Graph
from refcompiler.ir import Program
from refcompiler.ir_text import print_program
from refcompiler.proofs import Verdict
from refcompiler.proofs.enumerate import all_legal_orders
from refcompiler.symbolic.validate import DEFAULT_MAX_TERMS, DEFAULT_TIMEOUT, Validation, scheduled_graph, symbolic_reference, validate_compiled

__all__ = ["AllSchedules", "validate_all_schedules", "canonical_text", "DEFAULT_ORDER_LIMIT"]

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
