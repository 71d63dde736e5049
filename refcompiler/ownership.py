"""The ownership rules OWN-1..4 (DESIGN §1, §6) over a graph, one swappable
checker per rule (a mutant weakens exactly one). Each yields
``InvariantViolation``s naming the nodes and storage involved; a name that
resolves to nothing is G-1's (``refcompiler.verifier``), not reported here.

- OWN-1: every owned variable names an owner, and that owner lists it as state.
- OWN-2: an owned variable appears nowhere but as its owner's state operand
  (not a data input, not a save target, not another node's state).
- OWN-3: no constant is a save target or a state operand.
- OWN-4: no placeholder is a state operand; at most one save per placeholder.
"""

from __future__ import annotations

from typing import Iterator

from specs import OpKind

from refcompiler.errors import InvariantViolation
from refcompiler.graph import Graph, StorageKind
from refcompiler.variants import swappable

__all__ = ["check_own1", "check_own2", "check_own3", "check_own4", "check_one_save_per_placeholder"]


@swappable
def check_own1(graph: Graph) -> Iterator[InvariantViolation]:
    for s in graph.storage_of_kind(StorageKind.OWNED):
        if s.owner is None:
            yield InvariantViolation("OWN-1", f"owned variable '{s.name}' names no owner", names=(s.name,))
            continue
        owner = graph.node_by_name.get(s.owner)
        if owner is not None and s.name not in owner.state:
            yield InvariantViolation(
                "OWN-1",
                f"owned variable '{s.name}' names owner '{s.owner}', which does not list it as state",
                names=(s.name, s.owner),
            )


@swappable
def check_own2(graph: Graph) -> Iterator[InvariantViolation]:
    for node in graph.nodes:
        for ref in node.inputs:
            s = graph.storage_by_name.get(ref.name)
            if s is not None and s.kind is StorageKind.OWNED:
                yield InvariantViolation(
                    "OWN-2",
                    f"node '{node.name}' reads owned variable '{s.name}' as a data input; "
                    f"owned state is visible only to its owner '{s.owner}' as a state operand",
                    names=(node.name, s.name),
                )
        for st in node.state:
            s = graph.storage_by_name.get(st)
            if s is not None and s.kind is StorageKind.OWNED and s.owner != node.name:
                yield InvariantViolation(
                    "OWN-2",
                    f"node '{node.name}' uses owned variable '{s.name}' as state, but its owner is '{s.owner}'",
                    names=(node.name, s.name),
                )
        if node.op is OpKind.SAVE:
            s = graph.storage_by_name.get(node.target)
            if s is not None and s.kind is StorageKind.OWNED:
                yield InvariantViolation(
                    "OWN-2",
                    f"save '{node.name}' writes owned variable '{s.name}'; only its owner '{s.owner}' may",
                    names=(node.name, s.name),
                )


@swappable
def check_own3(graph: Graph) -> Iterator[InvariantViolation]:
    for node in graph.nodes:
        written = list(node.state)
        if node.op is OpKind.SAVE:
            written.append(node.target)
        for name in written:
            s = graph.storage_by_name.get(name)
            if s is not None and s.kind is StorageKind.CONSTANT:
                how = "saves into" if node.op is OpKind.SAVE and name == node.target else "uses as state"
                yield InvariantViolation(
                    "OWN-3", f"node '{node.name}' {how} constant '{s.name}'", names=(node.name, s.name)
                )


@swappable
def check_own4(graph: Graph) -> Iterator[InvariantViolation]:
    for node in graph.nodes:
        for st in node.state:
            s = graph.storage_by_name.get(st)
            if s is not None and s.kind is StorageKind.PLACEHOLDER:
                yield InvariantViolation(
                    "OWN-4",
                    f"node '{node.name}' ({node.op.value}) writes placeholder '{s.name}' as state; only save may",
                    names=(node.name, s.name),
                )
    yield from check_one_save_per_placeholder(graph)


@swappable
def check_one_save_per_placeholder(graph: Graph) -> Iterator[InvariantViolation]:
    by_target: dict[str, list[str]] = {}
    for node in graph.saves():
        s = graph.storage_by_name.get(node.target)
        if s is not None and s.kind is StorageKind.PLACEHOLDER:
            by_target.setdefault(s.name, []).append(node.name)
    for target, savers in by_target.items():
        if len(savers) > 1:
            yield InvariantViolation(
                "OWN-4",
                f"placeholder '{target}' is saved by {len(savers)} nodes: {', '.join(savers)}",
                names=(target, *savers),
            )
