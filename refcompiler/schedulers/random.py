"""The seeded random scheduler: each step, a uniformly random ready node.

The same graph and seed always give the same order (``random.Random(seed)``
over the ready nodes sorted by creation order), so a failure replays.
"""

from __future__ import annotations

import random

import networkx as nx

from refcompiler.graph import Graph
from refcompiler.schedulers.kahn import kahn

__all__ = ["random_schedule"]


def random_schedule(graph: Graph, deps: nx.DiGraph, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return kahn(graph, deps, lambda ready: ready[rng.randrange(len(ready))])
