"""Graph dead-code elimination (DESIGN §5).

A node is live if it has an effect (``has_effect``) or a live node reads one
of its results; every other node is dropped. Marking backwards from the
effectful nodes gives the fixpoint of "drop nodes whose results are unused"
in one sweep. Storage is kept as it is: a placeholder or owned variable is
part of the function's interface whether or not a node still touches it.
"""

from __future__ import annotations

from refcompiler import memos, variants
from refcompiler.graph import Graph, Node
from refcompiler.ir import IdentityTable
from refcompiler.variants import swappable

__all__ = ["dce", "has_effect"]


@swappable
def has_effect(node: Node) -> bool:
    """A save writes a placeholder and an owner updates its state: both always
    have an effect, whether or not anything reads their results."""
    return node.spec.effect or bool(node.state)


# the last graph asked about (by id, kept in the entry), under the swap table then
# (``has_effect`` may be swapped), and its result: the oracle's model and the compiler's
# preparation of one graph ask in turn, and the same result object lets what is kept per
# graph object (effects, bound inputs) be found
_last = memos.kept(IdentityTable(1))


def dce(graph: Graph) -> Graph:
    """``graph`` without the nodes whose results no live node reads and that
    have no effect; the kept nodes keep their creation order. The last
    graph's result is remembered (per swap table): asked again, the same
    object."""
    table = variants.active()
    found = _last.result(id(graph), table)
    if found is not None:
        return found  # type: ignore[return-value]
    result = _dead_code_removed(graph)
    _last.put(id(graph), table, graph, result)
    return result


def _dead_code_removed(graph: Graph) -> Graph:
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
