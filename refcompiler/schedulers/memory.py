"""The memory-aware scheduler (DESIGN §5): among the ready nodes, first the one
that frees the most bytes.

A node *frees* an activation (a node result that is not a view) when it is
the last node still to run among those that read it, directly or through a
chain of ``reshape`` views; it *allocates* its own results, except a view's,
which takes no memory. Score = bytes freed - bytes allocated; ties go to
creation order. It is a Kahn order over the dependency graph, so always legal.
"""

from __future__ import annotations

from typing import Sequence

import networkx as nx

from refcompiler.graph import Graph
from refcompiler.schedulers.kahn import kahn
from refcompiler.verifier import Types, infer_types

__all__ = ["memory_schedule"]

Value = tuple[str, int]  # (node, result index)


def memory_schedule(graph: Graph, deps: nx.DiGraph, seed: int = 0, *, types: Types | None = None) -> list[str]:
    """``seed`` is unused. The graph must be valid; ``types``: its result types
    (``infer_types(graph)``) if the caller has them, else they are inferred."""
    if types is None:
        types = infer_types(graph)
    holders = _holders(graph)
    size = {v: types[v].nbytes for v in holders}
    waiting = {v: set(h) for v, h in holders.items()}  # holders not yet scheduled
    reads: dict[str, list[Value]] = {n.name: [] for n in graph.nodes}  # node -> the values it holds
    for v, h in holders.items():
        for name in h:
            reads[name].append(v)
    allocates = {
        n.name: 0 if n.spec.view else sum(types[(n.name, k)].nbytes for k in range(len(n.spec.results)))
        for n in graph.nodes
    }

    def score(name: str) -> int:
        freed = sum(size[v] for v in reads[name] if len(waiting[v]) == 1)  # ``name`` is the one left
        return freed - allocates[name]

    def choose(ready: Sequence[str]) -> str:
        # max keeps the first of equal scores, and ready is in creation order
        return max(ready, key=score)

    def scheduled(name: str) -> None:
        for v in reads[name]:
            waiting[v].discard(name)

    return kahn(graph, deps, choose, on_scheduled=scheduled)


def _holders(graph: Graph) -> dict[Value, set[str]]:
    """Each activation value -> the nodes that read it, directly or through views."""
    holders: dict[Value, set[str]] = {
        (n.name, k): set() for n in graph.nodes if not n.spec.view for k in range(len(n.spec.results))
    }

    def origin(name: str, index: int) -> Value | None:
        seen: set[str] = set()
        while True:
            node = graph.node_by_name.get(name)
            if node is None:  # storage: no activation behind it
                return None
            if not node.spec.view:
                return (name, index)
            if name in seen or not node.inputs:
                return None
            seen.add(name)
            name, index = node.inputs[0].name, node.inputs[0].result

    for node in graph.nodes:
        for ref in node.inputs:
            value = origin(ref.name, ref.result)
            if value is not None:
                holders[value].add(node.name)
    return holders
