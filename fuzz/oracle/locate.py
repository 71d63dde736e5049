"""Locations of faults (``Location``) from the structured data a checker
gives: the names an ``InvariantViolation`` carries, the IR instruction it is
about, the nodes that write a storage."""

from __future__ import annotations

from typing import Iterable

from specs import OpKind

from refcompiler.errors import InvariantViolation
from refcompiler.graph import Graph, Node

from fuzz.oracle.finding import Location

__all__ = ["locate", "locate_violation", "locate_writers", "locate_edge", "locate_conflict", "blame_of"]


def _node_name(raw: str) -> str:
    """A node name from a name a checker uses: a node, or an IR value
    (``%node``, ``%node:k``) or instruction named after one."""
    name = raw.lstrip("%")
    base, sep, index = name.rpartition(":")
    return base if sep and index.isdigit() else name


def _kinds(names: Iterable[str], graphs: tuple[Graph, ...]) -> dict[str, str]:
    """Node name -> op kind for the ``names`` that are nodes (looked up in ``graphs`` in turn)."""
    found: dict[str, str] = {}
    for raw in names:
        name = _node_name(raw)
        for g in graphs:
            node = g.node_by_name.get(name)
            if node is not None:
                found.setdefault(name, node.op.value)
                break
    return found


def locate(
    names: Iterable[str], *graphs: Graph, instruction: int | None = None, site: Iterable[str] | None = None
) -> Location:
    """The nodes ``names`` refer to (looked up in ``graphs`` in turn; names
    that are no node, e.g. storage, are left out) and their op kinds;
    ``site``: the names at the fault itself (their kinds are ``Location.site``;
    ``None``: all of them)."""
    nodes = _kinds(names, graphs)
    at = None if site is None else tuple(sorted(set(_kinds(site, graphs).values())))
    return Location(tuple(nodes), tuple(sorted(set(nodes.values()))), instruction, at)


# a fault of the arena layout: where it shows is whichever buffers the
# allocator happened to overlap, so no op kind is its site
LAYOUT_RULES = ("MEM-1",)
# a rule about owned state (IR-5): the owner is whichever op holds the state,
# the fault is in how the compiler keeps it, so no op kind is its site either
STATE_RULES = ("IR-5",)


def locate_violation(e: InvariantViolation, *graphs: Graph) -> Location:
    """Where a violation is: the names it carries and, for one found in IR, the
    instruction (its index, and the node or value it is named after, which is
    the site; none for a layout fault)."""
    if e.invariant in LAYOUT_RULES + STATE_RULES:
        return locate((*e.names, *filter(None, [e.instruction_name])), *graphs, instruction=e.instruction, site=())
    if e.instruction_name is None:
        return locate(e.names, *graphs, instruction=e.instruction)
    return locate((*e.names, e.instruction_name), *graphs, instruction=e.instruction, site=(e.instruction_name,))


def locate_edge(names: tuple[str, ...], *graphs: Graph) -> Location:
    """An SCH-1 violation of the edge ``names = (pred, node)``: ``node`` ran
    too early, which is the site."""
    return locate(names, *graphs, site=names[-1:])


def locate_conflict(graph: Graph, pair: tuple[str, str], storage: str) -> Location:
    """An unordered conflicting pair on ``storage``: the writer(s) of it are the site."""
    writers = [n for n in pair if n in graph.node_by_name and _writes(graph.node_by_name[n], storage)]
    return locate(pair, graph, site=writers)


def blame_of(e: InvariantViolation) -> str:
    """The component a violation's stage names: ``after pass NAME`` -> NAME,
    ``after lowering`` -> ``lowering``; an SCH-1 the compiler raised blames
    the scheduler, a layout fault (MEM-1, checked on the allocator's result)
    the allocator; otherwise none."""
    if e.stage.startswith("after pass "):
        return e.stage[len("after pass "):]
    if e.stage.startswith("after "):
        return e.stage[len("after "):]
    if e.invariant in LAYOUT_RULES:
        return "allocator"
    return "scheduler" if e.invariant == "SCH-1" else ""


def _writes(node: Node, storage: str) -> bool:
    return storage in node.state or (node.op is OpKind.SAVE and node.target == storage)


def locate_writers(graph: Graph, storage: str) -> Location:
    """The nodes that write ``storage`` (its save or its owner) and the
    producers of the values saved into it. The site: its save; for owned
    state none (as for ``STATE_RULES``: any owner op would show it)."""
    names: list[str] = []
    writers: list[str] = []
    for node in graph.nodes:
        if _writes(node, storage):
            names.append(node.name)
            writers.append(node.name)
        if node.op is OpKind.SAVE and node.target == storage and node.inputs and node.inputs[0].name in graph.node_by_name:
            names.append(node.inputs[0].name)
    owned = any(storage in node.state for node in graph.nodes)
    return locate(names, graph, site=() if owned else writers)
