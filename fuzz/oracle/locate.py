"""Locations of faults (``Location``) from the structured data a checker
gives: the names an ``InvariantViolation`` carries, the IR instruction it is
about, the nodes that write a storage."""

from __future__ import annotations

from typing import Iterable

from specs import OpKind

from refcompiler.errors import InvariantViolation
from refcompiler.graph import Graph

from fuzz.oracle.finding import Location

__all__ = ["locate", "locate_violation", "locate_writers"]


def _node_name(raw: str) -> str:
    """A node name from a name a checker uses: a node, or an IR value
    (``%node``, ``%node:k``) or instruction named after one."""
    name = raw.lstrip("%")
    base, sep, index = name.rpartition(":")
    return base if sep and index.isdigit() else name


def locate(names: Iterable[str], *graphs: Graph, instruction: int | None = None) -> Location:
    """The nodes ``names`` refer to (looked up in ``graphs`` in turn; names
    that are no node, e.g. storage, are left out) and their op kinds."""
    nodes: dict[str, None] = {}
    kinds: set[str] = set()
    for raw in names:
        name = _node_name(raw)
        for g in graphs:
            node = g.node_by_name.get(name)
            if node is not None:
                nodes[name] = None
                kinds.add(node.op.value)
                break
    return Location(tuple(nodes), tuple(sorted(kinds)), instruction)


def locate_violation(e: InvariantViolation, *graphs: Graph) -> Location:
    """Where a violation is: the names it carries and, for one found in IR, the
    instruction (its index, and the node or value it is named after)."""
    names = e.names if e.instruction_name is None else (*e.names, e.instruction_name)
    return locate(names, *graphs, instruction=e.instruction)


def locate_writers(graph: Graph, storage: str) -> Location:
    """The nodes that write ``storage`` (its save or its owner) and the
    producers of the values saved into it."""
    names: list[str] = []
    for node in graph.nodes:
        if storage in node.state:
            names.append(node.name)
        if node.op is OpKind.SAVE and node.target == storage:
            names.append(node.name)
            if node.inputs and node.inputs[0].name in graph.node_by_name:
                names.append(node.inputs[0].name)
    return locate(names, graph)
