"""G-1 (DESIGN §6) stated again, independently of the verifier
(``refcompiler.verifier``), for when the verifier is the code under test: the
reducer of a case the verifier wrongly accepts cannot ask the verifier's type
inference whether a smaller graph still breaks G-1 (it would say no, and no
edit would be kept), so it asks ``breaks_g1``, as it asks ``fuzz.ownership``
for OWN-1..4. The tests hold the two to the same verdicts on generated graphs,
valid and invalid, and on the reducer's edits.

It reads the op tables (``specs.OPS``) directly, not through the compiler's
swap point, and checks, in this order: unique names; each node's arity, state
count and attributes; references that resolve to a value; owners that name a
node; an acyclic data graph; then, in a topological order, each node's input
dtypes, state dtypes and shapes (the spec's shape rule) and each save's type
against its target's. Size limits are not G-1 and are not checked.
"""

from __future__ import annotations

from graphlib import CycleError, TopologicalSorter

from specs import OPS, AttrKind, Dtype, OpKind, ShapeError, TensorType

from refcompiler.graph import Graph, Node

__all__ = ["breaks_g1"]


def breaks_g1(graph: Graph) -> bool:
    """Whether ``graph`` breaks G-1."""
    names = [s.name for s in graph.storage] + [n.name for n in graph.nodes]
    if len(set(names)) != len(names):
        return True
    storage = {s.name: TensorType(s.shape, s.dtype) for s in graph.storage}
    nodes = {n.name: n for n in graph.nodes}
    if any(s.owner is not None and s.owner not in nodes for s in graph.storage):
        return True
    if any(not _well_formed(n, storage, nodes) for n in graph.nodes):
        return True
    order = TopologicalSorter({n.name: {r.name for r in n.inputs if r.name in nodes} for n in graph.nodes})
    try:
        evaluation = list(order.static_order())
    except CycleError:
        return True
    types: dict[tuple[str, int], TensorType] = {}
    for name in evaluation:
        node, spec = nodes[name], OPS[nodes[name].op]
        ins = [storage[r.name] if r.name in storage else types[(r.name, r.index or 0)] for r in node.inputs]
        first = ins[0].dtype if ins else None
        if any((want := spec.input_dtype(k, first)) is not None and t.dtype is not want for k, t in enumerate(ins)):
            return True
        state = [storage[s] for s in node.state]
        if any(s.dtype is not Dtype.FLOAT32 for s in state):
            return True
        attrs = node.attr_dict(spec)
        try:
            results = spec.shape_rule(ins, state, attrs)
        except ShapeError:
            return True
        except Exception:  # a rule meeting what it was never meant to see: no types, as the reducer had
            return True
        types.update(((name, k), t) for k, t in enumerate(results))
        if node.op is OpKind.SAVE and storage.get(str(attrs["target"])) != ins[0]:
            return True
    return False


def _well_formed(node: Node, storage: dict[str, TensorType], nodes: dict[str, Node]) -> bool:
    """Arity, state, attributes and references of one node, by its spec."""
    spec = OPS[node.op]
    if (not node.inputs) if spec.variadic else len(node.inputs) != len(spec.inputs):
        return False
    if len(node.state) != len(spec.state) or len(set(node.state)) != len(node.state):
        return False
    if any(s not in storage for s in node.state):
        return False
    for ref in node.inputs:
        if ref.name in storage:
            if ref.index is not None:
                return False
            continue
        if ref.name not in nodes:
            return False
        results = len(OPS[nodes[ref.name].op].results)
        if results == 0 or (ref.index is None and results > 1) or (ref.index is not None and ref.index >= results):
            return False
    given = dict(node.attrs)
    known = {a.name: a for a in spec.attrs}
    if any(key not in known for key in given):
        return False
    for a in spec.attrs:
        if a.name not in given:
            if a.required:
                return False
        elif not _attr_fits(a.kind, given[a.name]):
            return False
    return True


def _int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _ints(v: object) -> bool:
    return isinstance(v, tuple) and all(_int(x) for x in v)


# what a value of each attribute kind may be
_FITS = {
    AttrKind.INT: _int,
    AttrKind.FLOAT: lambda v: _int(v) or isinstance(v, float),
    AttrKind.BOOL: lambda v: isinstance(v, bool),
    AttrKind.INT_LIST: _ints,
    AttrKind.AXES: lambda v: v is None or _int(v) or _ints(v),
    AttrKind.NAME: lambda v: isinstance(v, str),
}


def _attr_fits(kind: AttrKind, v: object) -> bool:
    """Whether an attribute value is of the kind its spec declares."""
    return _FITS[kind](v)
