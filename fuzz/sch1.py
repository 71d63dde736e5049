"""SCH-1 (DESIGN §4) stated again, independently of the dependency model
(``refcompiler.effects``, ``refcompiler.deps``), for when that model is the code
under test: an order checked only against the compiler's own dependency graph
is legal by construction when the graph itself misses an edge (a reader
through a chain of views, a second input, a save taken for a no-op), and the
fault shows later, if at all, as an IR-1 or IR-4 violation blamed on lowering,
or as a wrong result.

``order_fault(graph, order)`` states the rule from the graph alone: every node
runs after the nodes whose results it reads, and before any save that writes
a placeholder it reads, directly or through a chain of views (the views' first
input), unless that save stores the placeholder's own value back (it writes
nothing). ``order`` must be a permutation of ``graph``'s nodes (the
compiler's check, which this one follows, says so otherwise). It reads the op
table (``specs.OPS``) directly, not through the compiler's swap point.
"""

from __future__ import annotations

from typing import Sequence

from specs import OPS, OpKind

from refcompiler.graph import Graph, Node, StorageKind

__all__ = ["order_fault"]


def order_fault(graph: Graph, order: Sequence[str]) -> tuple[str, str, str] | None:
    """``None`` if ``order`` keeps the rule, else ``(first, second, why)``: a
    pair it runs the wrong way round (``second`` runs before ``first``)."""
    position = {name: i for i, name in enumerate(order)}
    nodes = graph.node_by_name
    for node in graph.nodes:
        for ref in node.inputs:
            if ref.name in nodes and position[ref.name] > position[node.name]:
                return ref.name, node.name, f"'{node.name}' reads its result"
    placeholders = {s.name for s in graph.storage if s.kind is StorageKind.PLACEHOLDER}
    saves = {n.attr_dict(OPS[n.op])["target"]: n for n in graph.nodes if n.op is OpKind.SAVE}
    for node in graph.nodes:
        for ref in node.inputs:
            p = _behind(graph, ref.name)
            save = saves.get(p) if p in placeholders else None
            if save is None or save is node or _behind(graph, save.inputs[0].name) == p:
                continue
            if position[node.name] > position[save.name]:
                return node.name, save.name, f"'{node.name}' reads placeholder '{p}', which '{save.name}' saves"
    return None


def _behind(graph: Graph, name: str) -> str | None:
    """The storage ``name`` aliases: itself, or the origin of a chain of views."""
    seen = set()
    while name not in graph.storage_by_name:
        node: Node | None = graph.node_by_name.get(name)
        if node is None or not OPS[node.op].view or name in seen or not node.inputs:
            return None
        seen.add(name)
        name = node.inputs[0].name
    return name
