"""The symbolic reference: ``refcompiler.reference.run_once`` on terms.

The same schedule-free semantics (DESIGN §2): pure nodes in a topological
order of the data edges, every read of a placeholder sees its entry value,
saves take effect at exit, an owner reads its state and writes the new state
atomically. Values are ``int64`` arrays of term ids (``refcompiler.symbolic.terms``).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

import numpy as np

from refcompiler.graph import Graph
from refcompiler.symbolic.kernels import Context, shared_kernel_values
from refcompiler.reference import run_once

__all__ = ["symbolic_run_once"]

TermValues = dict[str, np.ndarray]


def symbolic_run_once(
    ctx: Context,
    graph: Graph,
    values: Mapping[str, np.ndarray],
    constants: Mapping[str, np.ndarray],
    attrs_of: dict[str, Mapping[str, object]] | None = None,
) -> TermValues:
    """One reference run of the valid ``graph`` from ``values`` (placeholders and
    owned variables) and ``constants``, all term arrays; the new values.
    ``attrs_of``: each node's attributes by name, filled as found, for the runs
    of one graph under the same swap points (the spec is one of them). A value
    a kernel made is read-only (``shared_kernel_values``)."""
    attrs_of = {} if attrs_of is None else attrs_of

    def kernel(node, ins, state):
        attrs = attrs_of.get(node.name)
        if attrs is None:
            spec = node.spec
            attrs = attrs_of[node.name] = MappingProxyType({a.name: a.default for a in spec.attrs} | node.attr_dict(spec))
        return shared_kernel_values(ctx, node.op, ins, state, attrs)

    return run_once(graph, values, constants, kernel)
