"""The symbolic reference: ``refcompiler.reference.run_once`` on terms.

The same schedule-free semantics (DESIGN §2): pure nodes in a topological
order of the data edges, every read of a placeholder sees its entry value,
saves take effect at exit, an owner reads its state and writes the new state
atomically. Values are ``int64`` arrays of term ids (``refcompiler.symbolic.terms``).
"""

from __future__ import annotations

from typing import Mapping

import networkx as nx
import numpy as np

from specs import OpKind

from refcompiler.graph import Graph, Ref
from refcompiler.symbolic.kernels import Context, run_symbolic_kernel
from refcompiler.verifier import data_graph

__all__ = ["symbolic_run_once"]

TermValues = dict[str, np.ndarray]


def symbolic_run_once(ctx: Context, graph: Graph, values: Mapping[str, np.ndarray], constants: Mapping[str, np.ndarray]) -> TermValues:
    """One reference run of the valid ``graph`` from ``values`` (placeholders and
    owned variables) and ``constants``, all term arrays; the new values."""
    entry = {**constants, **values}
    results: dict[tuple[str, int], np.ndarray] = {}
    out: TermValues = {name: v.copy() for name, v in values.items()}
    saved: TermValues = {}

    def read(ref: Ref) -> np.ndarray:
        if graph.is_storage(ref):
            return entry[ref.name]
        return results[(ref.name, ref.result)]

    order = nx.lexicographical_topological_sort(data_graph(graph), key=graph.creation_order.__getitem__)
    for name in order:
        node = graph.node_by_name[name]
        ins = [read(r) for r in node.inputs]
        state = [entry[s] for s in node.state]
        attrs = {a.name: a.default for a in node.spec.attrs} | node.attr_dict()
        res, new_state = run_symbolic_kernel(ctx, node.op, ins, state, attrs)
        for k, r in enumerate(res):
            results[(node.name, k)] = r
        for s, v in zip(node.state, new_state, strict=True):
            out[s] = v
        if node.op is OpKind.SAVE:
            saved[node.target] = ins[0].copy()
    out.update(saved)
    return out
