"""Conflicting pairs of nodes and the decision problem SCH-2 poses (DESIGN §4).

Two nodes *conflict* when they touch the same storage and at least one of them
writes it: a save and a reader of its placeholder, two saves into one
placeholder, an owner and a foreign reader of its state, a save into a
constant and a reader of that constant, and so on. Conflicts come from the
raw effects (``refcompiler.effects``), so they exist for invalid graphs too.

SCH-2 holds iff every conflicting pair is ordered by the dependency graph
(one reaches the other). ``Problem`` is what every decider receives: the
graph as scheduled (after ``deps.break_save_cycles``), its acyclic dependency
graph and the conflicts; a decider answers with a ``Decision`` (an ``Order``
per pair) that ``refcompiler.proofs.proof`` turns into a ``Proof``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Mapping

import networkx as nx

from specs.cached import cached_property

from refcompiler.deps import dependency_graph, is_acyclic, save_cycles_broken
from refcompiler.effects import conflict_storage, node_effects
from refcompiler.errors import InvariantViolation
from refcompiler.graph import Graph
from refcompiler.verifier import data_graph

__all__ = [
    "Conflict",
    "conflicts",
    "Order",
    "Pair",
    "Problem",
    "Decision",
    "prepare",
    "legal_dependency_graph",
]

Pair = tuple[str, str]


@dataclass(frozen=True)
class Conflict:
    """Nodes ``a`` and ``b`` (``a`` first in creation order) both touch ``storage``
    and at least one of them writes it."""

    a: str
    b: str
    storage: str

    @property
    def pair(self) -> Pair:
        return (self.a, self.b)


def conflicts(graph: Graph) -> list[Conflict]:
    """Every conflicting pair, once per storage they share, sorted by the creation
    order of ``a``, then ``b``, then the storage name. A node never conflicts with
    itself (an owner reads and writes its own state atomically). A state operand
    or save target that names no storage (G-1) touches nothing."""
    effects = node_effects(graph)
    known = graph.storage_by_name.keys()
    order = graph.creation_order
    touchers: dict[str, list[str]] = {}
    for name, eff in effects.items():
        for s in eff.touches & known:
            touchers.setdefault(s, []).append(name)
    # candidates: a writer of some storage and another node touching it
    pairs = {
        tuple(sorted((w, other), key=order.__getitem__))
        for s, names in touchers.items()
        for w in names
        if s in effects[w].writes
        for other in names
        if other != w
    }
    found = [(a, b, s) for a, b in pairs for s in conflict_storage(effects[a], effects[b]) & known]
    ranked = sorted(found, key=lambda t: (order[t[0]], order[t[1]], t[2]))
    return [Conflict(a, b, s) for a, b, s in ranked]


class Order(enum.Enum):
    """How the dependency graph orders a pair ``(a, b)``."""

    A_FIRST = "a before b in every legal schedule"
    B_FIRST = "b before a in every legal schedule"
    UNORDERED = "legal schedules disagree"
    UNKNOWN = "undecided (timeout or too many schedules)"

    @property
    def ordered(self) -> bool:
        return self in (Order.A_FIRST, Order.B_FIRST)


@dataclass(frozen=True)
class Problem:
    """The input of every decider.

    ``graph``: the graph as scheduled (``break_save_cycles`` applied if memory
    edges closed a cycle); ``deps``: its dependency graph, acyclic;
    ``conflicts``: of ``graph``; ``pairs``: their distinct node pairs, in order.
    ``rewritten``: names of the nodes ``break_save_cycles`` added.
    """

    graph: Graph
    deps: nx.DiGraph = field(compare=False)
    conflicts: tuple[Conflict, ...]
    rewritten: tuple[str, ...] = ()

    @cached_property
    def pairs(self) -> tuple[Pair, ...]:
        return tuple(dict.fromkeys(c.pair for c in self.conflicts))


@dataclass(frozen=True)
class Decision:
    """A decider's answer: an ``Order`` per pair of ``Problem.pairs`` it checked, and
    for the first unordered pair (in ``Problem.pairs`` order) two legal schedules
    ordering it oppositely, ``witness[0]`` with ``a`` first, or ``None``.
    ``legal_orders``: how many legal schedules exist, when the decider counted
    them all (enumeration does)."""

    engine: str
    orders: Mapping[Pair, Order]
    witness: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    detail: str = ""
    legal_orders: int | None = None

    def first(self, wanted: Order) -> Pair | None:
        return next((p for p, o in self.orders.items() if o is wanted), None)


def legal_dependency_graph(graph: Graph) -> nx.DiGraph:
    """``deps.dependency_graph(graph)``, which must be acyclic.

    Raises G-1 if the data edges alone form a cycle, else SCH-1 (no legal
    schedule exists) naming the cycle through memory edges.
    """
    return _legal(graph, dependency_graph(graph))


def _legal(graph: Graph, deps: nx.DiGraph) -> nx.DiGraph:
    """``deps`` (the dependency graph of ``graph``) if it is acyclic; else
    ``legal_dependency_graph``'s G-1 or SCH-1."""
    if is_acyclic(deps):
        return deps
    data = data_graph(graph)
    if not nx.is_directed_acyclic_graph(data):
        cycle = [u for u, _ in nx.find_cycle(data)]
        raise InvariantViolation(
            "G-1", f"the data graph has a cycle: {' -> '.join(cycle + cycle[:1])}; no schedule exists", names=tuple(cycle)
        )
    cycle = [u for u, _ in nx.find_cycle(deps)]
    raise InvariantViolation(
        "SCH-1",
        f"no legal schedule exists: the dependency graph has a cycle {' -> '.join(cycle + cycle[:1])}",
        names=tuple(cycle),
    )


def prepare(graph: Graph) -> Problem:
    """The problem for ``graph``: ``break_save_cycles`` first (as the compiler
    does), then the dependency graph, which must be acyclic (see
    ``legal_dependency_graph``), and the conflicts."""
    scheduled, deps = save_cycles_broken(graph)
    if scheduled is not graph:  # save_cycles_broken found graph's own model acyclic otherwise
        deps = _legal(scheduled, deps)
    added = tuple(n.name for n in scheduled.nodes if n.name not in graph.node_by_name)
    return Problem(graph=scheduled, deps=deps, conflicts=tuple(conflicts(scheduled)), rewritten=added)
