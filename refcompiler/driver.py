"""The compiler driver (DESIGN §5): graph in, allocated program out.

    verify -> dce -> break_save_cycles -> schedule (checked: SCH-1) -> lower
           -> IR passes (the IR verified after lowering and after each pass)
           -> allocate (MEM-1 checked)

``compile_graph`` is the one entry point every caller uses (``refc compile``,
``refc run``, the fuzzers); ``run_compiled`` executes the result under the
sanitizer. A scheduler or a pass pipeline may be a user's (``module:attribute``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence, TypeVar

import networkx as nx
import numpy as np

from specs.cached import cached_property

from refcompiler import variants
from refcompiler.allocator import allocate
from refcompiler.collector import collector_paused
from refcompiler.deps import break_save_cycles, check_schedule, deps_edges, save_cycles_broken
from refcompiler.errors import UsageError
from refcompiler.graph import Graph
from refcompiler.graph_passes.dce import dce
from refcompiler.interpreter import execute, execute_runs
from refcompiler.ir import Program
from refcompiler.lowering import Lowering
from refcompiler.passes import Pass, built_in, resolve_pipeline, run_pipeline
from refcompiler.schedulers import SCHEDULERS, Scheduler, order_names, resolve_scheduler, run_scheduler
from refcompiler.schedulers.memory import memory_schedule
from refcompiler.values import Values, bind_inputs
from refcompiler.verifier import Types, ref_type, verify

__all__ = [
    "Compiled",
    "Prepared",
    "prepare",
    "compile_graph",
    "scheduler_order",
    "compile_order",
    "run_compiled",
    "run_compiled_each",
    "fit_schedule",
    "scheduled_graph",
    "scheduled_model",
]


T = TypeVar("T")

@dataclass(frozen=True)
class Compiled:
    """``scheduled_graph``: the input as the scheduler saw it (``scheduled_graph``
    of the input); ``schedule``: its legal order; ``program``: lowered, passes
    applied, allocated."""

    scheduled_graph: Graph
    schedule: tuple[str, ...]
    program: Program


def scheduled_graph(graph: Graph) -> Graph:
    """The graph as the scheduler sees it: ``graph`` after graph dead-code
    elimination (``dce``) and with save cycles broken (``break_save_cycles``).
    Every order the compiler accepts is an order of this graph."""
    return break_save_cycles(dce(graph))


def scheduled_model(graph: Graph) -> tuple[Graph, nx.DiGraph]:
    """``scheduled_graph(graph)`` and its dependency graph (``dependency_graph``),
    which is made once when there is no save cycle to break (the usual case:
    ``save_cycles_broken``)."""
    return save_cycles_broken(dce(graph))


@dataclass(frozen=True)
class Prepared:
    """What ``compile_graph`` derives from the graph alone, before any order:
    ``graph`` verified (G-1, OWN-1..4), ``scheduled`` (``scheduled_graph``),
    ``deps`` (its dependency graph, which the schedule is checked against) and
    ``types`` (its result types). A caller compiling one graph under many
    schedules makes it once (``prepare``) and passes it to every
    ``compile_graph``, under the same mutant.

    ``memo`` holds the last order a built-in scheduler gave, the last order
    found legal (SCH-1) and the last program lowered (each keyed by what it is a
    function of), so that compiling one order under several pipelines
    schedules, checks and lowers it once. ``programs`` holds the
    programs compiled from built-in passes, by order, passes and swap points
    (``_program``): an order compiled again (two schedulers agreeing, or a
    scheduler's order given explicitly too) gives the program it gave."""

    graph: Graph
    scheduled: Graph
    deps: nx.DiGraph
    types: Types
    memo: dict[str, tuple[object, object]] = field(default_factory=dict, compare=False, repr=False)
    programs: dict[tuple, Program] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def edges(self) -> tuple[tuple[str, str], ...]:
        """The edges of ``deps`` (``deps_edges``), which every order is checked against."""
        return deps_edges(self.deps)

    def remembered(self, slot: str, key: object, make: Callable[[], T]) -> T:
        """``make()``, or the value kept in ``slot`` when it was made for ``key``
        (one entry per slot: the last one). ``make`` must be a deterministic
        function of ``key`` and this graph; what it raises is not kept."""
        found = self.memo.get(slot)
        if found is not None and found[0] == key:
            return found[1]  # type: ignore[return-value]
        value = make()
        self.memo[slot] = (key, value)
        return value


def prepare(graph: Graph) -> Prepared:
    """Verify ``graph`` (raises the first violation) and derive what every
    order of it is compiled from (with the collector paused:
    ``refcompiler.collector.collector_paused``)."""
    with collector_paused():
        return _prepare(graph)


def _prepare(graph: Graph) -> Prepared:
    types = verify(graph)
    scheduled, deps = scheduled_model(graph)
    return Prepared(graph, scheduled, deps, _types_of(scheduled, graph, types))


def compile_graph(
    graph: Graph,
    *,
    scheduler: str | Scheduler = "topo",
    seed: int = 0,
    pipeline: str | Sequence = "O0",
    schedule: Sequence[str] | None = None,
    prepared: Prepared | None = None,
) -> Compiled:
    """Compile ``graph``.

    The graph is verified first (G-1, OWN-1..4). With ``schedule`` given, that
    order is used instead of the scheduler's: it may leave out nodes ``dce``
    removes, and the copies ``break_save_cycles`` adds are placed right after
    their inputs; it must otherwise be legal. Either way the order is checked
    (SCH-1), so a wrong user scheduler is reported, not trusted. Raises
    ``InvariantViolation`` for a broken invariant, ``UsageError`` for an
    unknown scheduler or pipeline.

    ``prepared``: ``prepare(graph)``, made once for many compilations of the
    same graph object; the result is what compiling without it gives, since
    every step of ``prepare`` is a deterministic function of the graph (the
    order is still checked against its ``deps``). Runs with the cyclic garbage
    collector paused (``refcompiler.collector.collector_paused``)."""
    with collector_paused():
        return _compile(graph, scheduler, seed, pipeline, schedule, prepared)


def _compile(
    graph: Graph,
    scheduler: str | Scheduler,
    seed: int,
    pipeline: str | Sequence,
    schedule: Sequence[str] | None,
    prepared: Prepared | None,
) -> Compiled:
    if prepared is None:
        prepared = prepare(graph)
    elif prepared.graph is not graph:
        raise UsageError("compile_graph: prepared was made from another graph")
    if schedule is None:
        order = order_names(_scheduled_order(prepared, scheduler, seed), len(prepared.scheduled.nodes))
    else:
        order = fit_schedule(graph, prepared.scheduled, order_names(schedule))
    return _compile_order(prepared, order, pipeline)


def scheduler_order(prepared: Prepared, scheduler: str | Scheduler = "topo", seed: int = 0) -> tuple[str, ...]:
    """The order ``scheduler`` gives for ``prepared.scheduled`` with ``seed``,
    exactly as ``compile_graph`` asks it (a user's scheduler once per call,
    untrusted): SCH-1 if it is not a list of node names; its legality is not
    checked here (``compile_order`` does). With ``compile_order`` it is
    ``compile_graph`` without ``schedule``, for a caller that compiles one
    scheduler's answer under several pipelines."""
    with collector_paused():
        return order_names(_scheduled_order(prepared, scheduler, seed), len(prepared.scheduled.nodes))


def compile_order(prepared: Prepared, order: Sequence[str], *, pipeline: str | Sequence = "O0") -> Compiled:
    """Compile ``order``, a scheduler's order of ``prepared.scheduled``
    (``scheduler_order``), as ``compile_graph`` compiles the order the
    scheduler gives it: checked against ``prepared.deps`` (SCH-1), not fitted
    as a given ``schedule`` is (copies that break save cycles are the
    scheduler's to place), lowered, passes run, allocated."""
    with collector_paused():
        return _compile_order(prepared, order_names(order), pipeline)


def _compile_order(prepared: Prepared, order: tuple[str, ...], pipeline: str | Sequence) -> Compiled:
    scheduled = prepared.scheduled
    # a pure function of the order and the prepared graph: the order compiled under several pipelines is checked once
    prepared.remembered("legal", order, lambda: check_schedule(scheduled, order, prepared.deps, prepared.edges))
    return Compiled(scheduled_graph=scheduled, schedule=order, program=_program(prepared, order, resolve_pipeline(pipeline)))


# Programs a ``Prepared`` keeps (``Prepared.programs``) before it forgets them all (a bound on memory).
PROGRAMS_KEPT = 128


def _program(prepared: Prepared, order: tuple[str, ...], passes: list[tuple[str, Pass]]) -> Program:
    """``order`` lowered, ``passes`` run (the IR verified after each) and
    allocated (MEM-1). With built-in passes only, every step is a deterministic
    function of the graph, the order, the passes and the swap points installed,
    so the program is kept under that key and an order compiled again gets it
    back; a user's pass (which need not be deterministic) runs every time. What
    lowering derives from the graph alone (``Lowering``) is kept per swap table."""
    swaps = tuple(sorted(variants.active().items(), key=lambda kv: kv[0]))

    def make() -> Program:
        lowering = prepared.remembered("lowering", swaps, lambda: Lowering(prepared.scheduled, prepared.types))
        lowered = prepared.remembered("lowered", (order, swaps), lambda: lowering.lower(order))
        return allocate(run_pipeline(lowered, passes))

    if not built_in(passes):
        return make()
    key = (order, tuple(run for _, run in passes), swaps)
    found = prepared.programs.get(key)
    if found is None:
        found = make()
        if len(prepared.programs) >= PROGRAMS_KEPT:
            prepared.programs.clear()
        prepared.programs[key] = found
    return found


def run_compiled(
    compiled: Compiled, inputs: Mapping[str, np.ndarray] | None = None, *, runs: int = 1
) -> dict[str, np.ndarray]:
    """Execute ``compiled`` ``runs`` times from the graph's initial values with
    ``inputs`` bound (``MalformedInput`` if one does not fit its storage);
    return the final placeholders and owned variables."""
    return execute(compiled.program, bind_inputs(compiled.scheduled_graph, inputs or {}), runs=runs)


def run_compiled_each(
    compiled: Compiled, inputs: Mapping[str, np.ndarray] | None = None, *, runs: int = 1, bound: Values | None = None
) -> list[dict[str, np.ndarray]]:
    """``run_compiled`` with the values after each run: element ``k`` is what
    ``run_compiled(compiled, inputs, runs=k + 1)`` returns, in ``runs`` runs.
    ``bound``: ``bind_inputs(compiled.scheduled_graph, inputs)`` if the caller
    has it already (it is only read)."""
    values = bind_inputs(compiled.scheduled_graph, inputs or {}) if bound is None else bound
    return execute_runs(compiled.program, values, runs=runs)


def _scheduled_order(prepared: Prepared, scheduler: str | Scheduler, seed: int) -> object:
    """The scheduler's order of ``prepared.scheduled``; a built-in scheduler's
    (a deterministic function of the graph and the seed) is remembered, a
    user's is called every time (it need not be deterministic)."""
    pick = resolve_scheduler(scheduler) if isinstance(scheduler, str) else scheduler
    if pick not in SCHEDULERS.values():
        return run_scheduler(pick, prepared.scheduled, prepared.deps, seed)
    if pick is memory_schedule:  # it needs the types, which the preparation has
        run = lambda: memory_schedule(prepared.scheduled, prepared.deps, seed, types=prepared.types)
    else:
        run = lambda: pick(prepared.scheduled, prepared.deps, seed)
    return prepared.remembered("scheduler", (pick, seed), run)


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


def _types_of(scheduled: Graph, graph: Graph, types: Types) -> Types:
    """The result types of ``scheduled`` from those of ``graph``, which it was
    made from by dropping nodes (dce) and adding ``identity`` copies that break
    save cycles: a copy has its input's type. Not ``infer_types(scheduled)``,
    which counts the copies against the byte limit (``REFC_MAX_BYTES``) and so
    refused a graph ``verify`` had found within it: a copy holds a value no larger
    than the placeholder it is saved into, whose bytes ``verify`` counted, and the
    arena is still checked against the limit (``Program.arena_bytes``)."""
    out = {key: t for key, t in types.items() if key[0] in scheduled.node_by_name}
    for node in scheduled.nodes:
        if node.name not in graph.node_by_name:  # a copy: one input, listed before nothing it needs
            (ref,) = node.inputs
            out[(node.name, 0)] = ref_type(graph, types, ref)
    return out

