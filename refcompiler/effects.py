"""Each node's effects on module storage, derived from the spec (DESIGN §4).

A node reads the storage its inputs name, also through a chain of views
(``reshape`` is lowered to a view, so a reader of the view reads the storage
underneath), and the storage of its state operands; it writes its state
operands and, for a save, its target, unless the save is a *self-save*: it
saves its target's own value (directly or through views), which is the entry
value (a placeholder has at most one save), so it changes nothing, lowering
emits nothing for it, and a reader of the target sees the same value before
and after it: no write, hence no memory edge (``deps``) and no conflict
(``proofs.conflicts``). These are the *raw* effects: they hold for invalid
graphs too, which is how ``refc prove --no-verify`` shows why an ownership
rule matters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from specs import OpKind

from refcompiler import memos, variants
from refcompiler.graph import Graph, Node, Ref
from refcompiler.ir import IdentityTable

__all__ = ["Effects", "node_effects", "storage_behind", "conflict_storage", "is_self_save"]


@dataclass(frozen=True)
class Effects:
    reads: frozenset[str]
    writes: frozenset[str]

    @property
    def touches(self) -> frozenset[str]:
        return self.reads | self.writes


def conflict_storage(a: Effects, b: Effects) -> frozenset[str]:
    """The conflict test (DESIGN §4): the storage on which effects ``a`` and ``b``
    conflict, i.e. that both touch and at least one of them writes."""
    return (a.writes & b.touches) | (b.writes & a.touches)


def storage_behind(graph: Graph, ref: Ref) -> str | None:
    """The storage a reference aliases: itself, or the origin of a chain of views."""
    seen: set[str] = set()
    while not graph.is_storage(ref):
        node = graph.node_by_name.get(ref.name)
        if node is None or not node.spec.view or ref.name in seen or not node.inputs:
            return None
        seen.add(ref.name)
        ref = node.inputs[0]
    return ref.name


def is_self_save(graph: Graph, node: Node) -> bool:
    """A save of its target's own value (directly or through views): a no-op write."""
    return node.op is OpKind.SAVE and bool(node.inputs) and storage_behind(graph, node.inputs[0]) == node.target


def _effects(graph: Graph, node: Node) -> Effects:
    reads = {s for s in (storage_behind(graph, r) for r in node.inputs) if s is not None}
    reads.update(node.state)
    writes = set(node.state)
    if node.op is OpKind.SAVE and not is_self_save(graph, node):
        writes.add(node.target)
    return Effects(frozenset(reads), frozenset(writes))


# node_effects of the graphs asked about lately, by id, under the swap table then (the
# effects read each node's spec, which a mutant may swap: ``variants.active()``); each entry
# keeps its graph, so its id is not reused meanwhile.
RECENT = 16  # a campaign asks about two or three graphs per case (as given, without dead code, with copies)
_recent = memos.kept(IdentityTable(RECENT))


def node_effects(graph: Graph) -> Mapping[str, Effects]:
    """Effects of every node, by node name (shared: not to be modified). Made
    once per graph object and swap table: the dependency model, break_save_cycles,
    the proofs and the fuzzer's schedules each ask, often about one graph."""
    table = variants.active()
    found = _recent.result(id(graph), table)
    if found is not None:
        return found  # type: ignore[return-value]
    effects = {node.name: _effects(graph, node) for node in graph.nodes}
    _recent.put(id(graph), table, graph, effects)
    return effects
