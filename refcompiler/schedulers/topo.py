"""The deterministic topological scheduler: Kahn's algorithm over the dependency
graph, ties broken by creation order."""

from __future__ import annotations

import networkx as nx

from refcompiler.graph import Graph
from refcompiler.schedulers.kahn import kahn

__all__ = ["topo_schedule"]


def topo_schedule(graph: Graph, deps: nx.DiGraph, seed: int = 0) -> list[str]:
    """The first ready node in creation order, each step (``seed`` is unused)."""
    return kahn(graph, deps, lambda ready: ready[0])
