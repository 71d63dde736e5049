"""The dependency graph and schedule legality (DESIGN §4, SCH-1).

Edges are the data edges (producer -> consumer) plus memory edges: for each
placeholder ``p`` saved by ``s``, an edge ``r -> s`` from every other node
``r`` that reads ``p`` (write-after-read: a read sees the entry value), unless
``s`` is a self-save (``effects.is_self_save``: it saves ``p``'s own value, so
it writes nothing and a reader sees the same value on either side). Owned
state adds no edges: only its owner touches it. A schedule is legal iff it is
a topological order of this graph.

Where memory edges would close a cycle (saves that read each other's
targets), ``break_save_cycles`` first gives each such save a private copy of
the value it saves, which changes no result; ``save_cycles_broken`` returns
the dependency graph of its answer too (made once when there is no cycle).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Sequence

import networkx as nx

from specs import OpKind

from refcompiler import memos, variants
from refcompiler.effects import RECENT, is_self_save, node_effects
from refcompiler.errors import InvariantViolation
from refcompiler.graph import Graph, Node, Ref, StorageKind
from refcompiler.ir import IdentityTable
from refcompiler.limits import clipped
from refcompiler.variants import swappable

__all__ = ["memory_edges", "DependencyGraph", "dependency_graph", "check_schedule", "order_faults", "listed", "deps_edges", "is_acyclic", "is_legal", "break_save_cycles", "save_cycles_broken"]

DATA = "data"
MEMORY = "memory"


@swappable
def memory_edges(graph: Graph) -> list[tuple[str, str, str]]:
    """``(reader, save, placeholder)`` for every reader of a saved placeholder."""
    effects = node_effects(graph)
    readers: dict[str, list[str]] = {}
    for name, eff in effects.items():
        for s in eff.reads:
            readers.setdefault(s, []).append(name)
    edges = []
    for save in graph.saves():
        target = graph.storage_by_name.get(save.target)
        if target is None or target.kind is not StorageKind.PLACEHOLDER or is_self_save(graph, save):
            continue
        for r in readers.get(target.name, []):
            if r != save.name:
                edges.append((r, save.name, target.name))
    return edges


class DependencyGraph(nx.DiGraph):
    """A ``networkx.DiGraph`` whose edge and degree views are made on each
    access instead of kept on the graph. networkx keeps them, and they refer
    back to the graph: every dependency graph whose edges or in-degrees were
    asked for (SCH-1's checks, a topological sort) was a reference cycle, left
    with its dictionaries for the cyclic collector, which a campaign then ran
    over again and again (1.3 such graphs per case; the collector was 4% of a
    campaign). The views themselves are networkx's."""

    edges = out_edges = property(lambda self: nx.classes.reportviews.OutEdgeView(self))  # type: ignore[assignment]
    in_edges = property(lambda self: nx.classes.reportviews.InEdgeView(self))  # type: ignore[assignment]
    degree = property(lambda self: nx.classes.reportviews.DiDegreeView(self))  # type: ignore[assignment]
    in_degree = property(lambda self: nx.classes.reportviews.InDegreeView(self))  # type: ignore[assignment]
    out_degree = property(lambda self: nx.classes.reportviews.OutDegreeView(self))  # type: ignore[assignment]


def dependency_graph(graph: Graph) -> nx.DiGraph:
    """Data and memory edges; each edge has ``kind`` (``"data"`` or ``"memory"``) and,
    for memory edges, ``storage``. A pair with both kinds keeps ``"data"``."""
    g = DependencyGraph()
    g.add_nodes_from(n.name for n in graph.nodes)
    for node in graph.nodes:
        for ref in node.inputs:
            if ref.name in graph.node_by_name:
                g.add_edge(ref.name, node.name, kind=DATA, storage=None)
    for r, s, p in memory_edges(graph):
        if not g.has_edge(r, s):
            g.add_edge(r, s, kind=MEMORY, storage=p)
    return g


def check_schedule(
    graph: Graph,
    schedule: Sequence[str],
    deps: nx.DiGraph | None = None,
    edges: Sequence[tuple[str, str]] | None = None,
) -> None:
    """Raise SCH-1 unless ``schedule`` is a permutation of the nodes respecting every edge.

    ``deps``: ``dependency_graph(graph)`` if the caller has it; ``edges``: its
    edges (``deps_edges(deps)``), if the caller has those too (they are scanned
    first: the walk that names the first broken edge runs only if one is)."""
    unique = set(schedule)
    if len(schedule) != len(graph.nodes) or len(unique) != len(schedule) or unique != graph.node_by_name.keys():
        missing, extra, twice = order_faults([n.name for n in graph.nodes], schedule)
        known = graph.node_by_name
        parts = [f"{what}: {listed(xs)}" for what, xs in (("missing", missing), ("unknown", extra), ("repeated", twice)) if xs]
        # the graph's nodes it gets wrong are named, for a finding to point at (``refc show`` draws them red)
        raise InvariantViolation("SCH-1", "the schedule is not a permutation of the nodes (" + "; ".join(parts) + ")",
                                 names=(*missing, *(n for n in twice if n in known)))
    deps = dependency_graph(graph) if deps is None else deps
    position = dict(zip(schedule, range(len(schedule)), strict=True))
    for u, v in deps_edges(deps) if edges is None else edges:
        if position[u] > position[v]:
            break
    else:
        return
    for i, name in enumerate(schedule):
        for pred in deps.predecessors(name):
            if position[pred] > i:
                attrs = deps.edges[pred, name]
                why = f"memory edge (reads '{attrs['storage']}' before it is saved)" if attrs["kind"] == MEMORY else "data edge"
                raise InvariantViolation(
                    "SCH-1",
                    f"'{name}' (step {i + 1}) runs before '{pred}' (step {position[pred] + 1}), "
                    f"violating the {why} {pred} -> {name}",
                    names=(pred, name),
                )


NAMES_LISTED = 10  # names a message lists (a user's scheduler may return millions)


def order_faults(names: Sequence[str], order: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """What keeps ``order`` from being a permutation of ``names``, each sorted:
    the names it misses, the ones it names that are not among them, and the
    ones it repeats (counted in linear time: an order may be millions long)."""
    known, given = set(names), set(order)
    return sorted(known - given), sorted(given - known), sorted(n for n, k in Counter(order).items() if k > 1)


def listed(names: Sequence[str]) -> str:
    """Node names for a one-line message: the first ``NAMES_LISTED``, each
    escaped (a user's scheduler may return any string), and how many more."""
    shown_names = ", ".join(clipped(n, 128) for n in names[:NAMES_LISTED])
    more = len(names) - NAMES_LISTED
    return shown_names + (f" and {more} more" if more > 0 else "")


def is_acyclic(deps: nx.DiGraph) -> bool:
    """Whether the directed graph ``deps`` has no cycle (a self-loop is one):
    ``networkx.is_directed_acyclic_graph`` as Kahn's count of the nodes that
    become ready, without its dispatch and views (asked several times per
    graph a campaign checks). Not ``schedulers.kahn``, which makes an order:
    this keeps no ready list in creation order and raises nothing."""
    waiting = {n: len(preds) for n, preds in deps.pred.items()}
    ready = [n for n, k in waiting.items() if k == 0]
    done = 0
    while ready:
        done += 1
        for m in deps.succ[ready.pop()]:
            waiting[m] -= 1
            if waiting[m] == 0:
                ready.append(m)
    return done == len(waiting)


def deps_edges(deps: nx.DiGraph) -> tuple[tuple[str, str], ...]:
    """The edges of a dependency graph, as ``(from, to)`` pairs (what
    ``check_schedule`` scans; a caller checking many orders makes them once)."""
    return tuple(deps.edges())


def is_legal(graph: Graph, schedule: Sequence[str]) -> bool:
    try:
        check_schedule(graph, schedule)
    except InvariantViolation:
        return False
    return True


def break_save_cycles(graph: Graph) -> Graph:
    """If memory edges close a cycle, give every save whose value reads a saved
    placeholder its own ``identity`` copy of that value; otherwise return ``graph``."""
    return save_cycles_broken(graph)[0]


def save_cycles_broken(graph: Graph) -> tuple[Graph, nx.DiGraph]:
    """``break_save_cycles(graph)`` and its dependency graph. Without a save
    cycle (the usual case) that is ``graph`` itself and the one dependency graph
    made to look for a cycle; with one, the graph with the copies and its own
    (not checked: a cycle the copies cannot open is still in it).

    Remembered for the last graphs asked about, per swap table (a mutant may
    change the model): the proof, the oracle's model and the compiler's
    preparation of one graph each ask. They share the dependency graph: not
    to be edited (a user's scheduler is given a copy)."""
    table = variants.active()
    found = _broken.result(id(graph), table)
    if found is not None:
        return found  # type: ignore[return-value]
    deps = dependency_graph(graph)
    result = (graph, deps) if is_acyclic(deps) else _copies_added(graph)
    _broken.put(id(graph), table, graph, result)
    return result


# ``save_cycles_broken``'s last results: a case asks about its graph as given and without dead code
_broken = memos.kept(IdentityTable(RECENT))


def _copies_added(graph: Graph) -> tuple[Graph, nx.DiGraph]:
    copied = _with_save_copies(graph)
    return copied, dependency_graph(copied)


def _with_save_copies(graph: Graph) -> Graph:
    """``graph`` with every save whose value reads a saved placeholder given its
    own ``identity`` copy of that value."""
    effects = node_effects(graph)
    saved = {s.target for s in graph.saves() if not is_self_save(graph, s)}
    taken = set(graph.storage_by_name) | set(graph.node_by_name)
    nodes: list[Node] = []
    for node in graph.nodes:
        if node.op is OpKind.SAVE and effects[node.name].reads & saved:
            name = _fresh(f"{node.name}.copy", taken)
            nodes.append(Node(name=name, op=OpKind.IDENTITY, inputs=node.inputs))
            node = replace(node, inputs=(Ref(name),))
        nodes.append(node)
    return graph.with_nodes(tuple(nodes))


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}{k}"
    taken.add(name)
    return name
