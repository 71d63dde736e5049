"""Kahn's algorithm with a chooser: the one loop that makes an order of a
dependency graph. Every built-in scheduler is ``kahn`` with its own
``choose``; the fuzzers draw their random legal orders through it, and the
proofs' witness, adversarial and model-read orders (``proofs.witness``) are
made by it.

Other loops over ready nodes are not this one: ``deps.is_acyclic`` counts the
nodes that become ready and makes no order (a cycle test asked several times
per graph, by callers that have no ``Graph`` to break ties with);
``Graph.data_order`` orders the data edges alone, by node index, before any
dependency graph exists; ``proofs.enumerate.legal_orders_of`` lists every
order, backtracking."""

from __future__ import annotations

import bisect
from typing import Callable, Sequence

import networkx as nx

from refcompiler.errors import InvariantViolation
from refcompiler.graph import Graph

__all__ = ["kahn", "Choose"]

# choose(ready) -> one of ``ready``; ``ready`` is sorted by creation order
Choose = Callable[[Sequence[str]], str]


def kahn(graph: Graph, deps: nx.DiGraph, choose: Choose, *, on_scheduled: Callable[[str], None] | None = None) -> list[str]:
    """Every node of ``deps`` in a topological order, picking among the ready
    nodes with ``choose``; ``on_scheduled(name)`` is told each pick.

    Raises SCH-1 if ``deps`` has a cycle (no legal schedule exists).
    """
    order_key = graph.creation_order.get
    missing = len(graph.nodes)
    indegree = {name: len(preds) for name, preds in deps.pred.items()}  # ``in_degree``, without a view per node
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
