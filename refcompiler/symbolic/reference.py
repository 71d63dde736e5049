"""The symbolic reference: ``refcompiler.reference.run_once`` on terms.

The same schedule-free semantics (DESIGN §2): pure nodes in a topological
order of the data edges, every read of a placeholder sees its entry value,
saves take effect at exit, an owner reads its state and writes the new state
atomically. Values are ``int64`` arrays of term ids (``refcompiler.symbolic.terms``).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from refcompiler.graph import Graph
from refcompiler.symbolic.kernels import Context, run_symbolic_kernel
from refcompiler.reference import run_once

__all__ = ["symbolic_run_once"]

TermValues = dict[str, np.ndarray]


def symbolic_run_once(ctx: Context, graph: Graph, values: Mapping[str, np.ndarray], constants: Mapping[str, np.ndarray]) -> TermValues:
    """One reference run of the valid ``graph`` from ``values`` (placeholders and
    owned variables) and ``constants``, all term arrays; the new values."""

    def kernel(node, ins, state):
        attrs = {a.name: a.default for a in node.spec.attrs} | node.attr_dict()
        return run_symbolic_kernel(ctx, node.op, ins, state, attrs)

    return run_once(graph, values, constants, kernel)
