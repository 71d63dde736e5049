"""The deterministic topological scheduler: Kahn's algorithm over the dependency
graph, ties broken by creation order. ``kahn`` is the loop the other built-in
schedulers share; they differ only in which ready node they pick."""

from __future__ import annotations

import bisect
from typing import Callable, Sequence

import networkx as nx

from refcompiler.errors import InvariantViolation
from refcompiler.graph import Graph

__all__ = ["topo_schedule", "kahn"]

# choose(ready) -> one of ``ready``; ``ready`` is sorted by creation order
Choose = Callable[[Sequence[str]], str]


def kahn(graph: Graph, deps: nx.DiGraph, choose: Choose, *, on_scheduled: Callable[[str], None] | None = None) -> list[str]:
    """Every node of ``deps`` in a topological order, picking among the ready
    nodes with ``choose``; ``on_scheduled(name)`` is told each pick.

    Raises SCH-1 if ``deps`` has a cycle (no legal schedule exists).
    """
    order_key = graph.creation_order.get
    missing = len(graph.nodes)
    indegree = {name: deps.in_degree(name) for name in deps.nodes}
    ready = sorted((n for n, d in indegree.items() if d == 0), key=lambda n: order_key(n, missing))
    order: list[str] = []
    while ready:
        name = choose(ready)
        ready.remove(name)
        order.append(name)
        if on_scheduled is not None:
            on_scheduled(name)
        for succ in deps.successors(name):
            indegree[succ] -= 1
            if indegree[succ] == 0:
                bisect.insort(ready, succ, key=lambda n: order_key(n, missing))
    if len(order) != len(indegree):
        stuck = sorted(n for n, d in indegree.items() if d > 0)
        raise InvariantViolation(
            "SCH-1", f"the dependency graph has a cycle; no legal schedule orders {', '.join(stuck)}", names=tuple(stuck)
        )
    return order


def topo_schedule(graph: Graph, deps: nx.DiGraph, seed: int = 0) -> list[str]:
    """The first ready node in creation order, each step (``seed`` is unused)."""
    return kahn(graph, deps, lambda ready: ready[0])
