"""Witness schedules: legal orders that expose an unordered conflict (DESIGN §4, §8).

- ``witness_schedules(graph, a, b)``: two legal orders, one with ``a`` before
  ``b`` and one with ``b`` before ``a``, built from the graph: schedule the
  ancestors of one node and the node itself first (an ancestor-closed set, so
  the order stays legal), then everything else; ``None`` if the pair is ordered.
- ``adversarial_schedule(graph)``: writers as early and readers as late as
  legality allows, the order most likely to expose a missing memory edge.
- ``schedule_from_positions``: a legal order read off a Z3 model.
- ``confirm_miscompile``: runs a counterexample's two schedules through the
  compiled pipeline and compares them with each other and with the reference.

All orders break ties by creation order, so they are deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping

import networkx as nx

from refcompiler.deps import break_save_cycles
from refcompiler.effects import node_effects
from refcompiler.errors import InvariantViolation, UsageError
from refcompiler.graph import Graph, StorageKind
from refcompiler.proofs.conflicts import Problem, legal_dependency_graph
from refcompiler.schedulers.kahn import kahn
from refcompiler.schedulers.topo import topo_schedule
from refcompiler.values import same_bits
from refcompiler.verifier import violations

if TYPE_CHECKING:
    from refcompiler.proofs.proof import Counterexample

__all__ = [
    "witness_schedules",
    "adversarial_schedule",
    "ancestors_first",
    "schedule_from_positions",
    "confirm_miscompile",
    "confirm",
    "Confirmation",
    "MISCOMPILE",
    "SAME",
    "UNDEFINED",
]

MISCOMPILE = "miscompile"
SAME = "same"
UNDEFINED = "undefined"


def _first_then_rest(graph: Graph, deps: nx.DiGraph, first: set[str]) -> tuple[str, ...]:
    """A topological order that lists every node of ``first`` (ancestor-closed)
    before any other node; ties by creation order."""
    order = graph.creation_order
    return _lowest_first(graph, deps, lambda n: (n not in first, order[n]))


def _lowest_first(graph: Graph, deps: nx.DiGraph, key: Callable[[str], tuple[int, int]]) -> tuple[str, ...]:
    """The topological order of ``deps`` that takes the ready node of lowest
    ``key`` each step (a key unique per node: the order networkx's
    ``lexicographical_topological_sort`` gives, without its edge view per step)."""
    return tuple(kahn(graph, deps, lambda ready: min(ready, key=key)))


def ancestors_first(problem: Problem, node: str) -> tuple[str, ...]:
    """A legal order of ``problem.graph`` that runs ``node`` as early as legality
    allows: its ancestors, then ``node``, then the rest."""
    return _first_then_rest(problem.graph, problem.deps, nx.ancestors(problem.deps, node) | {node})


def witness_schedules(graph: Graph, a: str, b: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """Two legal full orders of ``graph``, the first with ``a`` before ``b``, the
    second with ``b`` before ``a``; ``None`` if the dependency graph orders the pair.

    Works on the graph as given (call ``deps.break_save_cycles`` first if memory
    edges may close a cycle); raises SCH-1 (or G-1) if no legal order exists,
    ``UsageError`` if ``a`` or ``b`` is not a node or they are the same node.
    """
    for n in (a, b):
        if n not in graph.node_by_name:
            raise UsageError(f"'{n}' is not a node of graph '{graph.name}'")
    if a == b:
        raise UsageError(f"a witness needs two different nodes, got '{a}' twice")
    deps = legal_dependency_graph(graph)
    if nx.has_path(deps, a, b) or nx.has_path(deps, b, a):
        return None
    return (
        _first_then_rest(graph, deps, nx.ancestors(deps, a) | {a}),
        _first_then_rest(graph, deps, nx.ancestors(deps, b) | {b}),
    )


def adversarial_schedule(graph: Graph, deps: nx.DiGraph | None = None) -> tuple[str, ...]:
    """A legal order with writers (saves, owners) as early and readers as late as
    legality allows.

    Among the ready nodes, Kahn's algorithm takes the lowest rank: 0 a writer;
    1 an ancestor of a writer that reads no storage another node writes; 2 such
    a reader (it must precede some writer); 3 any other non-reader; 4 any other
    reader; ties by creation order. Raises SCH-1 (or G-1) if no legal order exists.
    ``deps``: ``graph``'s dependency graph, acyclic, when the caller has it
    (made in the same swap context: it is what this would make).
    """
    deps = legal_dependency_graph(graph) if deps is None else deps
    effects = node_effects(graph)
    writers_of: dict[str, set[str]] = {}
    for name, eff in effects.items():
        for s in eff.writes:
            writers_of.setdefault(s, set()).add(name)
    writers = {n for n, eff in effects.items() if eff.writes}
    readers = {n for n, eff in effects.items() if any(writers_of.get(s, set()) - {n} for s in eff.reads)}
    feeds_writer = set(writers)
    stack = list(writers)
    while stack:
        for p in deps.predecessors(stack.pop()):
            if p not in feeds_writer:
                feeds_writer.add(p)
                stack.append(p)

    def rank(n: str) -> int:
        if n in writers:
            return 0
        if n in feeds_writer:
            return 2 if n in readers else 1
        return 4 if n in readers else 3

    order = graph.creation_order
    return _lowest_first(graph, deps, lambda n: (rank(n), order[n]))


def schedule_from_positions(problem: Problem, positions: Mapping[str, int]) -> tuple[str, ...]:
    """Nodes sorted by their position in a model, ties broken by a topological
    order (creation order first: ``topo_schedule``), so that a model of the edge
    constraints gives a legal order even where it leaves unrelated nodes at one
    position."""
    topo = {n: i for i, n in enumerate(topo_schedule(problem.graph, problem.deps))}
    return tuple(sorted(topo, key=lambda n: (positions[n], topo[n])))


@dataclass(frozen=True)
class Confirmation:
    """What running a counterexample's two schedules showed: ``outcome`` is
    ``"miscompile"``, ``"same"`` or ``"undefined"``; ``detail`` says why."""

    outcome: str
    detail: str


def confirm_miscompile(graph: Graph, cex: "Counterexample", *, pipeline: str = "O0") -> str:
    """``confirm(graph, cex, pipeline=pipeline).outcome``: ``"miscompile"``, ``"same"`` or ``"undefined"``."""
    return confirm(graph, cex, pipeline=pipeline).outcome


def confirm(graph: Graph, cex: "Counterexample", *, pipeline: str = "O0") -> Confirmation:
    """Run both schedules of ``cex`` through the compiled pipeline
    (``driver.compile_graph(..., schedule=s, pipeline=pipeline)``, then
    ``driver.run_compiled(..., runs=1)``) and compare the final placeholders and
    owned variables bit for bit with each other and with the reference.

    Outcomes:
    - ``"undefined"``: the verifier rejects the graph, so the reference is
      undefined (and the compiler refuses it);
    - ``"miscompile"``: a value differs, or the pipeline fails on a schedule
      with an invariant violation (the IR verifier or the sanitizer catching
      what the dependency model let through): the reference is defined and the
      compiled program does not reproduce it;
    - ``"same"``: both schedules reproduce the reference.

    The schedules may name the copies ``deps.break_save_cycles`` adds. SCH-1
    from the driver (a schedule illegal under the dependency model in force)
    and every other error propagate.
    """
    # Imported here: the driver pulls in the whole pipeline, which the deciders never need.
    from refcompiler.driver import compile_graph, run_compiled
    from refcompiler.reference import run_reference

    found = violations(graph)
    if found:
        ids = ", ".join(dict.fromkeys(v.invariant for v in found))
        return Confirmation(UNDEFINED, f"the verifier rejects the graph ({ids}), so the reference is undefined")
    names = {n for s in cex.schedules for n in s}
    target = graph if names <= set(graph.node_by_name) else break_save_cycles(graph)
    want = run_reference(graph, runs=1)
    for k, schedule in enumerate(cex.schedules, 1):
        try:
            got = run_compiled(compile_graph(target, schedule=schedule, pipeline=pipeline), runs=1)
        except InvariantViolation as e:
            if e.invariant == "SCH-1":
                raise
            return Confirmation(MISCOMPILE, f"pipeline {pipeline} fails on schedule {k}: {e.invariant}: {e.detail}")
        for s in graph.storage:
            if s.kind is StorageKind.CONSTANT:
                continue
            if s.name not in got or not same_bits(got[s.name], want[s.name]):
                return Confirmation(
                    MISCOMPILE, f"under schedule {k}, pipeline {pipeline} gives {s.kind.value} '{s.name}' a value the reference does not"
                )
    return Confirmation(SAME, f"both schedules give the reference result under pipeline {pipeline}")
