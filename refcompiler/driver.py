"""The compiler driver (DESIGN §5): graph in, allocated program out.

    verify -> dce -> break_save_cycles -> schedule (checked: SCH-1) -> lower
           -> IR passes (the IR verified after lowering and after each pass)
           -> allocate (MEM-1 checked)

``compile_graph`` is the one entry point every caller uses (``refc compile``,
``refc run``, the fuzzers); ``run_compiled`` executes the result under the
sanitizer. A scheduler or a pass pipeline may be a user's (``module:attribute``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from refcompiler.allocator import allocate
from refcompiler.deps import break_save_cycles, check_schedule, dependency_graph
from refcompiler.errors import ExecutionError, InvariantViolation, RefCompilerError
from refcompiler.graph import Graph
from refcompiler.graph_passes.dce import dce
from refcompiler.interpreter import execute
from refcompiler.ir import Program
from refcompiler.lowering import lower
from refcompiler.passes import resolve_pipeline, run_pipeline
from refcompiler.schedulers import SCHEDULERS, Scheduler, resolve_scheduler
from refcompiler.values import bind_inputs
from refcompiler.verifier import verify

__all__ = ["Compiled", "compile_graph", "run_compiled", "fit_schedule"]


@dataclass(frozen=True)
class Compiled:
    """``graph``: the input after ``dce`` and ``break_save_cycles`` (what was
    scheduled); ``schedule``: its legal order; ``program``: lowered, passes
    applied, allocated."""

    graph: Graph
    schedule: tuple[str, ...]
    program: Program


def compile_graph(
    graph: Graph,
    *,
    scheduler: str | Scheduler = "topo",
    seed: int = 0,
    pipeline: str | Sequence = "O0",
    schedule: Sequence[str] | None = None,
) -> Compiled:
    """Compile ``graph``.

    The graph is verified first (G-1, OWN-1..4). With ``schedule`` given, that
    order is used instead of the scheduler's: it may leave out nodes ``dce``
    removes, and the copies ``break_save_cycles`` adds are placed right after
    their inputs; it must otherwise be legal. Either way the order is checked
    (SCH-1), so a wrong user scheduler is reported, not trusted. Raises
    ``InvariantViolation`` for a broken invariant, ``UsageError`` for an
    unknown scheduler or pipeline.
    """
    verify(graph)
    scheduled = break_save_cycles(dce(graph))
    deps = dependency_graph(scheduled)
    if schedule is None:
        pick = resolve_scheduler(scheduler) if isinstance(scheduler, str) else scheduler
        order = _names(_call_user(pick, "scheduler", scheduled, deps, seed))
    else:
        order = fit_schedule(graph, scheduled, _names(schedule))
    check_schedule(scheduled, order, deps)
    program = run_pipeline(lower(scheduled, order), resolve_pipeline(pipeline))
    return Compiled(graph=scheduled, schedule=order, program=allocate(program))


def run_compiled(
    compiled: Compiled, inputs: Mapping[str, np.ndarray] | None = None, *, runs: int = 1
) -> dict[str, np.ndarray]:
    """Execute ``compiled`` ``runs`` times from the graph's initial values with
    ``inputs`` bound (``MalformedInput`` if one does not fit its storage);
    return the final placeholders and owned variables."""
    return execute(compiled.program, bind_inputs(compiled.graph, inputs or {}), runs=runs)


def _names(order: object) -> tuple[str, ...]:
    if not isinstance(order, (list, tuple)):
        raise InvariantViolation("SCH-1", f"a schedule is a list of node names; got {type(order).__name__} {order!r:.80}")
    bad = [x for x in order if not isinstance(x, str)]
    if bad:
        raise InvariantViolation("SCH-1", f"a schedule lists node names; got {bad[0]!r}")
    return tuple(order)  # type: ignore[arg-type]


def _call_user(fn: Callable[..., object], what: str, *args: object) -> object:
    """Call a scheduler; one of the user's that raises is a finding about it (exit 1),
    not a bug in refc. The built-ins are trusted to raise only refc errors."""
    if fn in SCHEDULERS.values():
        return fn(*args)
    try:
        return fn(*args)
    except RefCompilerError:
        raise
    except Exception as e:
        name = getattr(fn, "__qualname__", repr(fn))
        raise ExecutionError(f"the {what} {name} raised {type(e).__name__}: {e}") from None


def fit_schedule(original: Graph, scheduled: Graph, order: Sequence[str]) -> tuple[str, ...]:
    """``order`` (for ``original``) made an order of ``scheduled``: nodes ``dce``
    removed are dropped; nodes ``break_save_cycles`` added go right after the
    last of their data inputs (first, if they have none)."""
    removed = set(original.node_by_name) - set(scheduled.node_by_name)
    out = [n for n in order if n not in removed]
    for node in scheduled.nodes:
        if node.name in original.node_by_name:
            continue
        inputs = {r.name for r in node.inputs}
        at = max((i + 1 for i, n in enumerate(out) if n in inputs), default=0)
        out.insert(at, node.name)
    return tuple(out)
