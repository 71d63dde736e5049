"""A graph as a Graphviz picture: storage, nodes, data, save, state and memory edges.

The picture follows the storage model (DESIGN §1, §4) rather than the file:

- a placeholder is two vertices, its value at entry (top, read by every
  reader) and, when a save writes it, its value at exit (bottom, written by
  that save), so the drawing reads top to bottom like a run; an owned
  variable likewise, entering and leaving its owner through state edges;
- data edges are labelled with the operand position they fill (``in 0``,
  ``in 1``) and the result they take (``:1``);
- each node shows its result types (valid graphs) and, per result, the inputs
  whose buffer it may overwrite (the spec's in-place list; in a valid graph,
  those of the result's type);
- memory edges (reader -> save, write-after-read) are drawn dotted, labelled
  with the placeholder;
- an invalid graph gets one note per violation, tied to the vertices it names,
  which are outlined in red;
- a legend explains every mark.

``add_graph`` draws into a ``Dot`` under an id prefix, so that a picture of a
counterexample or a case can hold the graph beside its schedules.
"""

from __future__ import annotations

import textwrap
from typing import Mapping, Sequence

from specs import OpKind, TensorType

from refcompiler.deps import memory_edges
from refcompiler.graph import Graph, Node, StorageKind
from refcompiler.limits import clipped
from refcompiler.pictures.dot import Dot, Html
from refcompiler.printer import op_symbol
from refcompiler.errors import InvariantViolation
from refcompiler.verifier import Types, checked, ref_type

__all__ = ["graph_dot", "add_graph", "add_legend", "GraphIds", "Style", "ERROR"]

ERROR = "#c62828"
GREY = "#616161"


class Style:
    """DOT attributes of each kind of vertex and edge (the legend shows them all)."""

    CONSTANT = {"shape": "box", "style": "filled", "fillcolor": "#e0e0e0", "color": GREY}
    PLACEHOLDER = {"shape": "cylinder", "style": "filled", "fillcolor": "#cfe2ff", "color": "#1565c0"}
    OWNED = {"shape": "hexagon", "style": "filled", "fillcolor": "#ffe0b2", "color": "#e65100"}
    NODE = {"shape": "box", "style": "rounded", "color": "#212121"}
    OWNER = {"shape": "box", "style": "rounded,bold", "color": "#e65100"}
    SAVE = {"shape": "invhouse", "style": "filled", "fillcolor": "#c8e6c9", "color": "#2e7d32"}
    NOTE = {"shape": "note", "style": "filled", "fillcolor": "#ffcdd2", "color": ERROR, "fontcolor": ERROR}
    DATA_EDGE = {"color": "#212121"}
    SAVE_EDGE = {"style": "dashed", "color": "#2e7d32", "penwidth": "1.5"}
    STATE_EDGE = {"style": "bold", "color": "#e65100"}
    MEMORY_EDGE = {"style": "dotted", "color": "#6a1b9a", "penwidth": "1.5", "fontcolor": "#6a1b9a"}
    NOTE_EDGE = {"style": "dashed", "color": ERROR, "arrowhead": "none"}


_STORAGE_STYLE = {StorageKind.CONSTANT: Style.CONSTANT, StorageKind.PLACEHOLDER: Style.PLACEHOLDER, StorageKind.OWNED: Style.OWNED}


class GraphIds:
    """Vertex ids of a graph drawn under ``prefix``: storage has separate ids
    from nodes, so even an invalid graph that reuses a name draws both."""

    def __init__(self, prefix: str = ""):
        self.prefix = prefix

    def entry(self, storage: str) -> str:
        return f"{self.prefix}entry:{storage}"

    def exit(self, storage: str) -> str:
        return f"{self.prefix}exit:{storage}"

    def node(self, name: str) -> str:
        return f"{self.prefix}node:{name}"


def _written(graph: Graph) -> set[str]:
    """Storage that has a value at exit distinct from entry: save targets and state."""
    out = {str(n.attr("target")) for n in graph.saves()}
    out.update(s for n in graph.nodes for s in n.state)
    return out & set(graph.storage_by_name)


def _storage_vertices(dot: Dot, graph: Graph, ids: GraphIds, flagged: set[str]) -> None:
    written = _written(graph)
    for s in graph.storage:
        base = dict(_STORAGE_STYLE[s.kind])
        kind = f"{s.kind.value} {TensorType(s.shape, s.dtype)}"
        if s.kind is StorageKind.OWNED:
            kind += f"\nowned by {s.owner}"
        if s.name in flagged:
            base.update(color=ERROR, penwidth="3")
        if s.name in written:
            dot.vertex(ids.entry(s.name), {**base, "label": f"{s.name} at entry\n{kind}"})
            dot.vertex(ids.exit(s.name), {**base, "label": f"{s.name} at exit", "style": "filled,bold"})
        else:
            note = "" if s.kind is StorageKind.CONSTANT else "\n(unchanged at exit)"
            dot.vertex(ids.entry(s.name), {**base, "label": f"{s.name}\n{kind}{note}"})
    dot.same_rank("min", [ids.entry(s.name) for s in graph.storage])
    dot.same_rank("max", [ids.exit(s.name) for s in graph.storage if s.name in written])  # storage order: the same text every run


def _inplace_text(node: Node, k: int, fitting: set[int] | None) -> str:
    """The inputs result ``k`` may overwrite: those of the spec's in-place list
    that are of its type (``fitting``; ``None``: types unknown), as
    ``share_buffers`` decides (an add of a [3] and a [1] overwrites no [1])."""
    spec = node.spec
    if spec.view:
        return "a view of in 0 (no copy)"
    allowed = [i for i in spec.inplace_inputs(k) if fitting is None or i in fitting]
    if not allowed:
        return "may overwrite no input"
    return "may overwrite " + ", ".join(f"in {i} ({spec.inputs[i]})" for i in allowed)


def _node_label(graph: Graph, node: Node, types: Types | None) -> Html:
    e = Html.escape
    rows = [f"<B>{e(node.name)}</B>", e(op_symbol(node.op))]
    results = node.spec.results
    for k, result in enumerate(results):
        typ = types.get((node.name, k)) if types is not None else None
        head = f":{k} {result}" if len(results) > 1 else result
        text = f"{head}: {typ}" if typ is not None else head
        fitting = None if typ is None else {i for i, ref in enumerate(node.inputs) if ref_type(graph, types, ref) == typ}
        rows.append(e(f"{text}, {_inplace_text(node, k, fitting)}"))
    if node.state:
        rows.append(e(f"state: {', '.join(node.state)} (in place)"))
    cells = "".join(f"<TR><TD>{r}</TD></TR>" for r in rows)
    return Html(f'<TABLE BORDER="0" CELLSPACING="0" CELLPADDING="1">{cells}</TABLE>')


def _node_vertices(dot: Dot, graph: Graph, ids: GraphIds, flagged: set[str], types: Types | None) -> None:
    for node in graph.nodes:
        if node.op is OpKind.SAVE:
            attrs: dict[str, str | Html] = {**Style.SAVE, "label": f"{node.name}\nsave -> {node.attr('target')}"}
        else:
            attrs = {**(Style.OWNER if node.state else Style.NODE), "label": _node_label(graph, node, types)}
        if node.name in flagged:
            attrs.update(color=ERROR, penwidth="3")
        dot.vertex(ids.node(node.name), attrs)


def _source(graph: Graph, ids: GraphIds, name: str, index: int | None) -> str:
    return ids.entry(name) if index is None and name in graph.storage_by_name else ids.node(name)


def _edges(dot: Dot, graph: Graph, ids: GraphIds, highlight: Mapping[tuple[str, str], str]) -> None:
    """Data, save and state edges, then memory edges; ``highlight`` maps a
    (from, to) node pair to a note drawn on that edge in red."""
    known = set(graph.storage_by_name) | set(graph.node_by_name)
    for node in graph.nodes:
        for pos, ref in enumerate(node.inputs):
            if ref.name not in known:
                continue
            label = f"in {pos}" + (f" (:{ref.index})" if ref.index is not None else "")
            dot.edge(_source(graph, ids, ref.name, ref.index), ids.node(node.name), _marked(Style.DATA_EDGE, label, highlight.get((ref.name, node.name))))
        target = str(node.attr("target")) if node.op is OpKind.SAVE else None
        if target in graph.storage_by_name:
            dot.edge(ids.node(node.name), ids.exit(target), {**Style.SAVE_EDGE, "label": "writes"})
        for pos, name in enumerate(node.state):
            if name in graph.storage_by_name:
                dot.edge(ids.entry(name), ids.node(node.name), {**Style.STATE_EDGE, "label": f"state {pos} (inout)"})
                dot.edge(ids.node(node.name), ids.exit(name), {**Style.STATE_EDGE, "label": "updated"})
    data = {(ref.name, node.name) for node in graph.nodes for ref in node.inputs}
    for reader, save, placeholder in memory_edges(graph):
        if (reader, save) in data and (reader, save) not in highlight:
            continue  # the data edge already orders them
        label = f"before the save\n(reads {placeholder} at entry)"
        dot.edge(ids.node(reader), ids.node(save), _marked(Style.MEMORY_EDGE, label, highlight.get((reader, save))))


def _marked(style: Mapping[str, str], label: str, note: str | None) -> dict[str, str]:
    if note is None:
        return {**style, "label": label}
    return {**style, "label": f"{label}\n{note}", "color": ERROR, "fontcolor": ERROR, "penwidth": "3"}


def _violation_notes(dot: Dot, graph: Graph, ids: GraphIds, found: list[InvariantViolation]) -> None:
    for i, v in enumerate(found):
        _note(dot, graph, ids, f"{ids.prefix}violation:{i}", f"{v.invariant}: {v.detail}", v.names)


MAX_NOTE = 400  # characters of a recorded finding's text drawn (a case file's text is data of any length)


def _note(dot: Dot, graph: Graph, ids: GraphIds, note: str, text: str, names: Sequence[str]) -> None:
    """A red note saying ``text``, tied to the nodes and storage of ``names`` in ``graph``."""
    dot.vertex(note, {**Style.NOTE, "label": textwrap.fill(text, 48, break_long_words=False, break_on_hyphens=False)})  # a path or command whole
    for name in dict.fromkeys(names):
        if name in graph.node_by_name:
            dot.edge(note, ids.node(name), Style.NOTE_EDGE)
        elif name in graph.storage_by_name:
            dot.edge(note, ids.entry(name), Style.NOTE_EDGE)


def add_graph(
    dot: Dot,
    graph: Graph,
    ids: GraphIds,
    *,
    highlight: Mapping[tuple[str, str], str] | None = None,
    verdict: tuple[list[InvariantViolation], Types | None] | None = None,
    finding: tuple[Sequence[str], str] | None = None,
) -> None:
    """Draw ``graph`` into ``dot`` with vertex ids from ``ids``; ``highlight``
    marks dependency edges (node pairs) in red with a note. ``verdict``: the
    verifier's ``checked(graph)``, when the caller has it (it is made once).
    ``finding``: the names of nodes or storage a recorded finding involves,
    drawn red, and its text, in a note tied to them."""
    found, types = checked(graph) if verdict is None else verdict
    flagged = {n for v in found for n in v.names} | set(finding[0] if finding else ())
    _storage_vertices(dot, graph, ids, flagged)
    _node_vertices(dot, graph, ids, flagged, None if found else types)
    _edges(dot, graph, ids, highlight or {})
    _violation_notes(dot, graph, ids, found)
    if finding is not None:
        _note(dot, graph, ids, f"{ids.prefix}finding", clipped(finding[1], MAX_NOTE), finding[0])


_LEGEND_ROWS = (
    (Style.CONSTANT["fillcolor"], "constant: read by anyone, written by nobody"),
    (Style.PLACEHOLDER["fillcolor"], "placeholder at entry (what every read sees) / at exit (what its save wrote)"),
    (Style.OWNED["fillcolor"], "owned variable at entry / at exit: only its owner reads and updates it"),
    ("#ffffff", "node: name, op, result types, the inputs each result may overwrite in place"),
    (Style.SAVE["fillcolor"], "save: the only writer of a placeholder, at most one per placeholder"),
)
_LEGEND_EDGES = (
    (Style.DATA_EDGE["color"], "solid", "data: fills operand in k of the node (:k names result k)"),
    (Style.SAVE_EDGE["color"], "dashed", "save writes the placeholder's exit value"),
    (Style.STATE_EDGE["color"], "bold", "state: the owner updates its variable in place"),
    (Style.MEMORY_EDGE["color"], "dotted", "memory edge: a reader must run before the save of what it reads"),
    (ERROR, "red", "a violated invariant or a broken ordering"),
)


def add_legend(dot: Dot, prefix: str = "") -> None:
    """A legend box explaining the vertex and edge kinds."""
    e = Html.escape
    rows = [f'<TR><TD BGCOLOR="{color}" WIDTH="24"> </TD><TD ALIGN="LEFT">{e(text)}</TD></TR>' for color, text in _LEGEND_ROWS]
    rows += [
        f'<TR><TD><FONT COLOR="{color}">{e(style)}</FONT></TD><TD ALIGN="LEFT"><FONT COLOR="{color}">{e(text)}</FONT></TD></TR>'
        for color, style, text in _LEGEND_EDGES
    ]
    table = '<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="3">' + "".join(rows) + "</TABLE>"
    dot.open(f"cluster_{prefix}legend", {"label": "legend", "color": GREY, "fontsize": "10"})
    dot.vertex(f"{prefix}legend", {"shape": "plaintext", "fontsize": "9", "label": Html(table)})
    dot.close()


def titled(title: str, notes: Sequence[str]) -> str:
    """A picture's title with its notes under it, each wrapped at 120 characters."""
    return "\n".join([title, *(textwrap.fill(n, 120, break_on_hyphens=False, break_long_words=False) for n in notes)])


def graph_dot(graph: Graph, finding: tuple[Sequence[str], str] | None = None, notes: Sequence[str] = ()) -> str:
    """The picture of ``graph`` (any loaded graph, valid or not) as DOT text;
    ``finding`` as ``add_graph`` draws it; ``notes``: a corpus case's
    provenance (who found it, the target), under a title naming it a case."""
    verdict = checked(graph)
    found = verdict[0]
    title = f"{'case' if notes else 'graph'} {graph.name}" + (f": {len(found)} violation(s)" if found else "")
    dot = Dot(graph.name, {"rankdir": "TB", "label": titled(title, notes), "labelloc": "t", "fontsize": "14"})
    add_graph(dot, graph, GraphIds(), verdict=verdict, finding=finding)
    add_legend(dot)
    return dot.text()
