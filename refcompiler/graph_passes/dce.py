"""Graph dead-code elimination (DESIGN §5).

A node is live if it has an effect (``has_effect``) or a live node reads one
of its results; every other node is dropped. Marking backwards from the
effectful nodes gives the fixpoint of "drop nodes whose results are unused"
in one sweep. Storage is kept as it is: a placeholder or owned variable is
part of the function's interface whether or not a node still touches it.
"""

from __future__ import annotations

from refcompiler.graph import Graph, Node
from refcompiler.variants import swappable

__all__ = ["dce", "has_effect"]


@swappable
def has_effect(node: Node) -> bool:
    """A save writes a placeholder and an owner updates its state: both always
    have an effect, whether or not anything reads their results."""
    return node.spec.effect or bool(node.state)


def dce(graph: Graph) -> Graph:
    """``graph`` without the nodes whose results no live node reads and that
    have no effect; the kept nodes keep their creation order."""
    live = {n.name for n in graph.nodes if has_effect(n)}
    work = list(live)
    while work:
        node = graph.node_by_name[work.pop()]
        for ref in node.inputs:
            if ref.name in graph.node_by_name and ref.name not in live:
                live.add(ref.name)
                work.append(ref.name)
    if len(live) == len(graph.nodes):
        return graph
    return graph.with_nodes(tuple(n for n in graph.nodes if n.name in live))
