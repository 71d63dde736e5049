"""Schedules as pictures: an SCH-2 counterexample, and a corpus case's schedule.

``counterexample_dot`` draws the graph (with the conflicting pair tied by a
red "no ordering" line: the dependency the graph lacks) beside the two legal
schedules, one column each, step k of both on one row, the conflicting pair
filled red and a red arrow showing which of the two runs first in each.

``case_dot`` draws a case's graph beside the schedule it records (a fuzz
finding's failing schedule, or the order its scheduler produced): every
dependency edge (data or memory) that the schedule runs backwards is red on
the graph and on the schedule, which is how a wrong scheduler's order shows; a schedule that breaks no edge says so
(the failure then lies in the compiled program: ``refc compile --format svg``).
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Mapping, Sequence

import networkx as nx

from refcompiler.deps import MEMORY, dependency_graph, listed, order_faults, save_cycles_broken
from refcompiler.errors import RefCompilerError
from refcompiler.graph import Graph
from refcompiler.graph_passes.dce import dce
from refcompiler.pictures.dot import Dot
from refcompiler.pictures.graph import ERROR, GraphIds, Style, add_graph, add_legend, titled

if TYPE_CHECKING:  # the proofs package imports z3, which a picture of a case does not need
    from refcompiler.proofs.proof import Counterexample

__all__ = ["counterexample_dot", "case_dot", "backward_edges"]

_STEP = {"shape": "box", "style": "rounded,filled", "fillcolor": "#ffffff", "color": "#9e9e9e"}
_CONFLICT = {"fillcolor": "#ffcdd2", "color": ERROR, "penwidth": "2.5", "fontcolor": ERROR}
_ORDER = {"color": "#bdbdbd", "arrowsize": "0.6"}


def _step_id(column: int, k: int) -> str:
    return f"schedule{column}:{k}"


def _add_schedule(dot: Dot, column: int, title: str, order: Sequence[str], marked: Mapping[str, str]) -> None:
    """One schedule as a column of numbered steps; ``marked`` nodes filled red,
    their note beside them."""
    dot.open(f"cluster_schedule{column}", {"label": title, "color": "#9e9e9e", "fontsize": "12"})
    for k, name in enumerate(order):
        attrs = dict(_STEP)
        attrs["label"] = f"{k + 1}. {name}"
        if name in marked:
            attrs.update(_CONFLICT)
            if marked[name]:
                attrs["label"] += "\n" + textwrap.fill(marked[name], 36)
        dot.vertex(_step_id(column, k), attrs)
    for k in range(len(order) - 1):
        dot.edge(_step_id(column, k), _step_id(column, k + 1), _ORDER)
    dot.close()


def _align(dot: Dot, columns: int, steps: int) -> None:
    """Step k of every schedule on one rank (needs ``newrank``)."""
    for k in range(steps):
        dot.same_rank("same", [_step_id(c, k) for c in range(1, columns + 1)])


def _first_runs(dot: Dot, column: int, order: Sequence[str], first: str, second: str, storage: str) -> None:
    i, j = order.index(first), order.index(second)
    dot.edge(_step_id(column, i), _step_id(column, j), {"color": ERROR, "penwidth": "2.5", "constraint": "false", "label": f"{storage}: {first} first", "fontcolor": ERROR})


def counterexample_dot(graph: Graph, cex: "Counterexample", *, explanation: str = "") -> str:
    """The graph with the missing ordering, and the two legal schedules that
    order ``cex.nodes`` oppositely, side by side."""
    a, b = cex.nodes
    title = f"{graph.name}: SCH-2 counterexample, '{a}' and '{b}' conflict on '{cex.storage}' and nothing orders them"
    if explanation:
        title += "\n" + textwrap.fill(explanation, 120)
    dot = Dot(graph.name, {"rankdir": "TB", "newrank": "true", "label": title, "labelloc": "t", "fontsize": "14"})
    ids = GraphIds("graph/")
    dot.open("cluster_graph", {"label": "the graph: no path between the conflicting pair", "color": "#9e9e9e"})
    add_graph(dot, graph, ids)
    missing = {"color": ERROR, "fontcolor": ERROR, "style": "dashed", "penwidth": "3", "dir": "none", "constraint": "false"}
    dot.edge(ids.node(a), ids.node(b), {**missing, "label": f"missing ordering\n(both touch {cex.storage})"})
    dot.close()
    marked = {a: "", b: ""}
    for column, order in enumerate(cex.schedules, 1):
        first, second = (a, b) if column == 1 else (b, a)
        _add_schedule(dot, column, f"legal schedule {column}: {first} before {second}", order, marked)
        _first_runs(dot, column, order, first, second, cex.storage)
    _align(dot, len(cex.schedules), min(len(s) for s in cex.schedules))
    add_legend(dot)
    return dot.text()


def backward_edges(graph: Graph, order: Sequence[str]) -> dict[tuple[str, str], str]:
    """Each dependency edge ``(u, v)`` of ``graph`` that ``order`` runs
    backwards (``v`` before ``u``), with a note saying why it matters."""
    position = {n: i for i, n in enumerate(order)}
    deps = _acyclic_deps(graph)
    out: dict[tuple[str, str], str] = {}
    for u, v, data in deps.edges(data=True):
        if u in position and v in position and position[v] < position[u]:
            if data.get("kind") == MEMORY:
                out[(u, v)] = f"the schedule runs {v} first: {u} then reads {data['storage']} after it is overwritten"
            else:
                out[(u, v)] = f"the schedule runs {v} before its input {u}"
    return out


def _acyclic_deps(graph: Graph) -> nx.DiGraph:
    """The dependency graph an order of ``graph`` is held to: memory edges that
    form a cycle between saves are the compiler's to break with private copies
    (``break_save_cycles``), so none of them is an order's fault; the copies'
    edges name no node of an order without them."""
    try:
        return save_cycles_broken(graph)[1]
    except RefCompilerError:  # a graph the compiler refuses: its edges as they are
        return dependency_graph(graph)


def _unscheduled(graph: Graph, schedule: Sequence[str]) -> str:
    """What makes ``schedule`` no order of the nodes the compiler schedules
    (``dce``: dead code is not scheduled), in words, or ``""``."""
    try:
        live = [n.name for n in dce(graph).nodes]
    except RefCompilerError:
        return ""
    missing, _, twice = order_faults(live, schedule)  # (the names it adds: dead code a case's schedule keeps, private copies)
    parts = [f"misses {listed(missing)}"] if missing else []
    parts += [f"names {listed(twice)} twice"] if twice else []
    return f"the order {' and '.join(parts)}: an order names each node the compiler schedules once (SCH-1)" if parts else ""


def case_dot(
    graph: Graph,
    schedule: Sequence[str],
    *,
    title: str,
    notes: Sequence[str] = (),
    label: str = "the case's schedule",
    program: str = "refc compile CASE --format svg",
    finding: tuple[Sequence[str], str] | None = None,
) -> str:
    """A case's graph beside its recorded schedule (the column titled
    ``label``), broken orderings in red, or what makes it no order of the
    nodes scheduled. ``program``: the command that draws the case's compiled
    program, named when the order is legal (``""``: none to name).
    ``finding``: what the campaign found, as ``add_graph`` draws it."""
    broken = backward_edges(graph, schedule)
    if not nx.is_directed_acyclic_graph(dependency_graph(graph)):
        notes = [*notes, "the memory edges form a cycle: the compiler first gives each such save a private copy (break_save_cycles)"]
    unscheduled = "" if broken else _unscheduled(graph, schedule)
    if unscheduled:
        notes = [*notes, unscheduled]
    elif not broken:
        notes = [*notes, "the schedule breaks no dependency" + (f": the failure is in the compiled program ({program})" if program else "")]
    dot = Dot(graph.name, {"rankdir": "TB", "label": titled(title, notes), "labelloc": "t", "fontsize": "14"})
    ids = GraphIds("graph/")
    dot.open("cluster_graph", {"label": "the graph", "color": "#9e9e9e"})
    add_graph(dot, graph, ids, highlight=broken, finding=finding)
    dot.close()
    marked = {v: note for (_, v), note in broken.items()}
    _add_schedule(dot, 1, label, schedule, marked)
    for u, v in broken:
        if u in schedule and v in schedule:
            dot.edge(_step_id(1, schedule.index(v)), _step_id(1, schedule.index(u)), {**Style.MEMORY_EDGE, "color": ERROR, "fontcolor": ERROR, "constraint": "false", "label": "runs too early"})
    add_legend(dot)
    return dot.text()
