"""The ownership rules OWN-1..4 (DESIGN §6) stated again, independently of the
verifier (``refcompiler.ownership``), for when the verifier is the code under
test: the reducer of a case the verifier wrongly accepts cannot ask the
verifier whether a smaller graph still breaks the rule (it would say no), so
it asks ``broken_rules``. The tests hold the two to the same verdicts on
generated graphs, valid and invalid.

One pass over the storage and one over the nodes, by what each name is:
- OWN-1: an owned variable names no owner, or names a node that does not list
  it as state (an owner naming no node is a dangling name: G-1's);
- OWN-2: an owned variable as a data input, a save target, or state of a node
  other than its owner;
- OWN-3: a constant as a save target or state;
- OWN-4: a placeholder as state, or saved by more than one node.
"""

from __future__ import annotations

from collections import Counter

from specs import OpKind

from refcompiler.graph import Graph, StorageKind

__all__ = ["OWNERSHIP_RULES", "broken_rules"]

OWNERSHIP_RULES = frozenset({"OWN-1", "OWN-2", "OWN-3", "OWN-4"})

# what using storage of a kind as state, or as a save's target, breaks
_AS_STATE = {StorageKind.CONSTANT: "OWN-3", StorageKind.PLACEHOLDER: "OWN-4"}
_AS_TARGET = {StorageKind.OWNED: "OWN-2", StorageKind.CONSTANT: "OWN-3"}


def broken_rules(graph: Graph) -> set[str]:
    """The ids of the ownership rules ``graph`` breaks (empty: none)."""
    kind = {s.name: s.kind for s in graph.storage}
    owner_of = {s.name: s.owner for s in graph.storage}
    nodes = {n.name: n for n in graph.nodes}
    broken: set[str] = set()
    for s in graph.storage:
        if s.kind is StorageKind.OWNED:
            owner = nodes.get(s.owner) if s.owner is not None else None
            if s.owner is None or (owner is not None and s.name not in owner.state):
                broken.add("OWN-1")
    saves: Counter[str] = Counter()
    for node in graph.nodes:
        if any(kind.get(ref.name) is StorageKind.OWNED for ref in node.inputs):
            broken.add("OWN-2")
        for name in node.state:
            k = kind.get(name)
            if k is StorageKind.OWNED:
                if owner_of[name] != node.name:
                    broken.add("OWN-2")
            elif k in _AS_STATE:
                broken.add(_AS_STATE[k])
        if node.op is OpKind.SAVE:
            k = kind.get(node.target)
            if k in _AS_TARGET:
                broken.add(_AS_TARGET[k])
            elif k is StorageKind.PLACEHOLDER:
                saves[node.target] += 1
    if any(n > 1 for n in saves.values()):
        broken.add("OWN-4")
    return broken
