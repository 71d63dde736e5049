"""The reference interpreter (DESIGN §2): the schedule-free oracle.

A run maps placeholder and owned values to new ones. Pure nodes run in a
topological order of the data edges; every read of a placeholder sees its
value at function entry; saves take effect at exit; an owner reads its state
and produces the new state atomically. The result does not depend on any
schedule, which is what makes it an oracle.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from specs import OpKind

from refcompiler.errors import ExecutionError
from refcompiler.graph import Graph, Node
from refcompiler.kernels import run_kernel
from refcompiler.values import Values, bind_inputs, constant_values
from refcompiler.verifier import evaluation_order

__all__ = ["run_reference", "run_once"]


def run_reference(graph: Graph, inputs: Mapping[str, np.ndarray] | None = None, *, runs: int = 1) -> Values:
    """Run ``runs`` times from the initial values (with ``inputs`` bound); return the final
    placeholders and owned variables. The graph must be valid (``verify``)."""
    values = bind_inputs(graph, inputs or {})
    constants = constant_values(graph)
    for _ in range(runs):
        values = run_once(graph, values, constants)
    return values


Kernel = Callable[[Node, list, list], tuple[tuple, tuple]]


def run_once(
    graph: Graph, values: Mapping[str, np.ndarray], constants: Mapping[str, np.ndarray], kernel: Kernel | None = None
) -> Values:
    """One run of the schedule-free semantics (DESIGN §2): every read of storage
    sees its value at entry, owners update their state, saves take effect at exit.
    ``kernel(node, inputs, state) -> (results, new state)``: the op meanings
    (default the numpy kernel table; the symbolic reference passes its own)."""
    kernel = kernel or _kernel
    entry = {**constants, **values}
    results: dict[tuple[str, int], np.ndarray] = {}
    out: Values = {name: v.copy() for name, v in values.items()}
    saved: dict[str, np.ndarray] = {}
    storage, nodes = graph.storage_by_name, graph.node_by_name
    for name in evaluation_order(graph):
        node = nodes[name]
        # a storage input (no index) sees its value at entry, else a node's result (``Graph.is_storage``)
        ins = [entry[r.name] if r.index is None and r.name in storage else results[(r.name, r.index or 0)] for r in node.inputs]
        state = [entry[s] for s in node.state]
        res, new_state = kernel(node, ins, state)
        for k, r in enumerate(res):
            results[(name, k)] = r
        for s, v in zip(node.state, new_state, strict=True):
            out[s] = v
        if node.op is OpKind.SAVE:
            saved[node.target] = ins[0].copy()
    out.update(saved)
    return out


def _kernel(node: Node, ins: list[np.ndarray], state: list[np.ndarray]) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    try:
        return run_kernel(node.op, ins, state, node.attr_dict())
    except ExecutionError as e:
        raise ExecutionError(f"node '{node.name}' ({node.op.value}): {e}", node=node.name) from None
