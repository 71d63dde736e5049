"""The graph verifier: G-1 and OWN-1..4 (DESIGN §6).

``violations(graph)`` lists every broken invariant it finds, each an
``InvariantViolation`` carrying the id and the names involved; ``verify``
raises the first. ``infer_types`` gives every node result its type (it is part
of G-1). The ownership rules (OWN-1..4) are ``refcompiler.ownership``'s, one
swappable function each so that a mutant can weaken exactly one rule.

Checked, per id:
- G-1: references resolve to a result that exists; arity, state count, dtypes,
  attributes and shapes follow the spec; a save's value has its target's type;
  the data graph is acyclic.
- OWN-1: every owned variable names an existing owner, and that owner lists it
  as state.
- OWN-2: an owned variable appears nowhere but as its owner's state operand
  (not a data input, not a save target, not another node's state).
- OWN-3: no constant is a save target or a state operand.
- OWN-4: no placeholder is a state operand; at most one save per placeholder.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Iterator

from specs import AttrKind, Dtype, OpKind, OpSpec, ShapeError, TensorType

from refcompiler import limits
from refcompiler.errors import InvariantViolation
from refcompiler.graph import Graph, Node, Ref
from refcompiler.ownership import check_own1, check_own2, check_own3, check_own4
from refcompiler.spec import specs_of
from refcompiler.variants import active

if TYPE_CHECKING:  # networkx (~190 ms to import) only for a graph with a cycle
    import networkx as nx

__all__ = ["Types", "verify", "violations", "checked", "infer_types", "ref_type", "graph_bytes", "data_graph", "evaluation_order", "attr_ok"]

Types = dict[tuple[str, int], TensorType]


def ref_type(graph: Graph, types: Types, ref: Ref) -> TensorType:
    """The type of what ``ref`` names in ``graph``: storage, or a node's result
    (in ``types``, ``infer_types(graph)`` or a part of it)."""
    if graph.is_storage(ref):
        s = graph.storage_by_name[ref.name]
        return TensorType(s.shape, s.dtype)
    return types[(ref.name, ref.result)]


def verify(graph: Graph) -> Types:
    """Raise the first violation; return the types of all node results."""
    found, types = checked(graph)
    if found:
        raise found[0]
    assert types is not None
    return types


def violations(graph: Graph) -> list[InvariantViolation]:
    return checked(graph)[0]


# The last valid graph checked, with what its verdict depends on besides the graph (the
# swap points installed: a mutant may change it; the limits: an environment variable may):
# a command prints every violation, then compiles or exports, which verifies again.
_last_valid: tuple[Graph, object, tuple[int, ...], Types] | None = None


def checked(graph: Graph) -> tuple[list[InvariantViolation], Types | None]:
    """Every violation, and the result types when shape inference ran through
    (a graph with ownership faults but no G-1 one has them): ``violations`` and
    ``infer_types`` in one walk. The last valid graph's verdict is remembered:
    an immutable graph checked twice in one context gets the same verdict (a
    copy of its types)."""
    global _last_valid
    context = (active(), limits.values())
    last = _last_valid
    if last is not None and last[0] is graph and last[1] is context[0] and last[2] == context[1]:
        return [], dict(last[3])
    found, types = _verdict(graph)
    _last_valid = (graph, context[0], context[1], dict(types)) if not found and types is not None else None
    return found, types


def _verdict(graph: Graph) -> tuple[list[InvariantViolation], Types | None]:
    specs = specs_of(graph.nodes)  # one walk: each node's spec resolved once
    out = list(_structure(graph, specs))
    for check in (check_own1, check_own2, check_own3, check_own4):
        out.extend(check(graph))
    types = None
    if not any(v.invariant == "G-1" for v in out):
        try:
            types = _infer(graph, specs)
        except InvariantViolation as v:
            out.append(v)
    return out, types


def evaluation_order(graph: Graph) -> Iterator[str]:
    """The nodes in the one order every graph-level walk uses: topological over
    data edges, ties broken by creation order (``Graph.data_order``, made once
    per graph). On a cycle, what networkx's walk gives: the nodes before it,
    then its error."""
    order = graph.data_order
    if order is None:
        import networkx as nx

        return nx.lexicographical_topological_sort(data_graph(graph), key=graph.creation_order.__getitem__)
    return iter(order)


def data_graph(graph: Graph) -> nx.DiGraph:
    """Producer -> consumer edges between nodes (storage is not a vertex)."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(n.name for n in graph.nodes)
    for node in graph.nodes:
        for ref in node.inputs:
            if ref.name in graph.node_by_name:
                g.add_edge(ref.name, node.name)
    return g


def _g1(message: str, *names: str) -> InvariantViolation:
    return InvariantViolation("G-1", message, names=names)


def check_structure(graph: Graph) -> Iterator[InvariantViolation]:
    """G-1 without shapes: references, arity, attributes, acyclicity."""
    return _structure(graph, specs_of(graph.nodes))


def _structure(graph: Graph, specs: list[OpSpec]) -> Iterator[InvariantViolation]:
    """``check_structure`` with ``specs[i]`` the spec of ``graph.nodes[i]``."""
    names = Counter([s.name for s in graph.storage] + [n.name for n in graph.nodes])
    for name, count in names.items():
        if count > 1:
            yield _g1(f"the name '{name}' is used {count} times", name)
    # result counts by node name (the last node of a name, as node_by_name)
    counts = {n.name: len(spec.results) for n, spec in zip(graph.nodes, specs)}
    for node, spec in zip(graph.nodes, specs):
        want = len(spec.inputs)
        if (spec.variadic and not node.inputs) or (not spec.variadic and len(node.inputs) != want):
            need = "at least 1" if spec.variadic else str(want)
            yield _g1(f"node '{node.name}' ({spec.name}) has {len(node.inputs)} inputs, needs {need}", node.name)
        if len(node.state) != len(spec.state):
            yield _g1(
                f"node '{node.name}' ({spec.name}) has {len(node.state)} state operands, needs {len(spec.state)}",
                node.name,
            )
        if len(set(node.state)) != len(node.state):
            yield _g1(f"node '{node.name}' lists a state operand twice", node.name)
        for ref in node.inputs:
            problem = _ref_problem(graph, counts, ref)
            if problem:
                yield _g1(f"node '{node.name}' input '{ref}': {problem}", node.name, ref.name)
        for st in node.state:
            if st not in graph.storage_by_name:
                yield _g1(f"node '{node.name}' state '{st}' names no storage", node.name, st)
        if node.attrs or any(a.required for a in spec.attrs):
            yield from _attr_problems(node, spec)
    for s in graph.storage:
        if s.owner is not None and s.owner not in graph.node_by_name:
            yield _g1(f"owned variable '{s.name}' names owner '{s.owner}', which is no node", s.name, s.owner)
    if graph.data_order is None:  # a cycle, or two nodes of one name: ask networkx which
        import networkx as nx

        dg = data_graph(graph)
        if not nx.is_directed_acyclic_graph(dg):
            cycle = [u for u, _ in nx.find_cycle(dg)]
            yield _g1(f"the data graph has a cycle: {' -> '.join(cycle + cycle[:1])}", *cycle)


def _ref_problem(graph: Graph, counts: dict[str, int], ref: Ref) -> str | None:
    if ref.name in graph.storage_by_name:
        return "storage has a single value, ':k' does not apply" if ref.index is not None else None
    n = counts.get(ref.name)
    if n is None:
        return "names no storage or node"
    if n == 0:
        return f"node '{ref.name}' ({graph.node_by_name[ref.name].op.value}) has no results"
    if ref.index is None and n > 1:
        return f"node '{ref.name}' has {n} results; name one as '{ref.name}:k'"
    if ref.index is not None and ref.index >= n:
        return f"node '{ref.name}' has {n} results, there is no result {ref.index}"
    return None


def _attr_problems(node: Node, spec: OpSpec) -> Iterator[InvariantViolation]:
    given = dict(node.attrs)
    known = {a.name for a in spec.attrs}
    for key in given:
        if key not in known:
            allowed = ", ".join(sorted(known)) or "none"
            yield _g1(f"node '{node.name}' ({spec.name}) has unknown attribute {limits.shown(key)} (allowed: {allowed})", node.name)
    for a in spec.attrs:
        if a.name not in given:
            if a.required:
                yield _g1(f"node '{node.name}' ({spec.name}) needs attribute '{a.name}'", node.name)
            continue
        if not attr_ok(a.kind, given[a.name]):
            yield _g1(
                f"node '{node.name}' attribute '{a.name}' must be {a.kind.value}, got {limits.shown(given[a.name])}", node.name
            )


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def attr_ok(kind: AttrKind, v: object) -> bool:
    """Whether ``v`` is a value of an attribute of ``kind`` (G-1 for a node's
    attributes; IR-1 for a kernel's, whose lists are tuples)."""
    if kind is AttrKind.INT:
        return _is_int(v)
    if kind is AttrKind.FLOAT:
        return _is_int(v) or isinstance(v, float)
    if kind is AttrKind.BOOL:
        return isinstance(v, bool)
    if kind is AttrKind.INT_LIST:
        return isinstance(v, tuple) and all(_is_int(x) for x in v)
    if kind is AttrKind.AXES:
        return v is None or _is_int(v) or (isinstance(v, tuple) and all(_is_int(x) for x in v))
    if kind is AttrKind.NAME:
        return isinstance(v, str)
    raise AssertionError(kind)


def infer_types(graph: Graph) -> Types:
    """Types of every node result, in a topological order of the data graph.

    Assumes ``check_structure`` passed; raises G-1 for dtype and shape faults,
    and ``LimitExceeded`` for a result over the element limit or a graph whose
    storage and results together are over the byte limit (``refcompiler.limits``),
    before anything of that size is allocated.
    """
    return _infer(graph, specs_of(graph.nodes))


def graph_bytes(graph: Graph, types: Types) -> int:
    """The bytes of ``graph``'s storage plus all its node results (``types``,
    from ``infer_types``): what ``REFC_MAX_BYTES`` bounds, and what one run
    of the graph writes at most."""
    return _storage_bytes(graph) + sum(t.nbytes for t in types.values())


def _storage_bytes(graph: Graph) -> int:
    return sum(TensorType(s.shape, s.dtype).nbytes for s in graph.storage)


def _infer(graph: Graph, specs: list[OpSpec]) -> Types:
    """``infer_types`` with ``specs[i]`` the spec of ``graph.nodes[i]``: one
    pass over the evaluation order."""
    types: Types = {}
    total = _storage_bytes(graph)
    limits.check("bytes", total, f"graph '{graph.name}' storage")
    # read once: the per-node checks below only call limits.check (and build its
    # message) when a bound is crossed
    max_elements, max_bytes = limits.value("elements"), limits.value("bytes")
    stored = {s.name: TensorType(s.shape, s.dtype) for s in graph.storage}  # the last of a name, as storage_by_name
    spec_by_name = {n.name: spec for n, spec in zip(graph.nodes, specs)}
    for name in evaluation_order(graph):
        node, spec = graph.node_by_name[name], spec_by_name[name]
        ins = [
            stored[r.name] if r.index is None and r.name in stored else types[(r.name, r.index or 0)]
            for r in node.inputs
        ]
        _check_input_dtypes(node, spec, ins)
        state = []
        for st in node.state:
            s = stored[st]
            if s.dtype is not Dtype.FLOAT32:
                raise _g1(f"node '{node.name}' state '{st}' is {s.dtype.value}, needs float32", node.name, st)
            state.append(s)
        attrs = node.attr_dict(spec)
        try:
            results = spec.shape_rule(ins, state, attrs)
        except ShapeError as e:
            raise _g1(f"node '{node.name}' ({spec.name}): {e}", node.name) from None
        for k, t in enumerate(results):
            if t.size > max_elements:
                limits.check("elements", t.size, f"node '{node.name}' ({spec.name}) result {k} {list(t.shape)}")
            total += t.nbytes
            types[(node.name, k)] = t
        if total > max_bytes:
            limits.check("bytes", total, f"graph '{graph.name}' at node '{node.name}'")
        if node.op is OpKind.SAVE:
            _check_save(node, str(attrs["target"]), ins[0], stored)
    return types


def _check_input_dtypes(node: Node, spec: OpSpec, ins: list[TensorType]) -> None:
    first = ins[0].dtype if ins else None
    for k, t in enumerate(ins):
        want = spec.input_dtype(k, first)
        if want is not None and t.dtype is not want:
            ref = node.inputs[k]
            raise _g1(
                f"node '{node.name}' ({spec.name}) input {k} '{ref}' is {t.dtype.value}, needs {want.value}",
                node.name,
                ref.name,
            )


def _check_save(node: Node, target: str, value: TensorType, stored: dict[str, TensorType]) -> None:
    want = stored.get(target)
    if want is None:
        raise _g1(f"save '{node.name}' target '{target}' names no storage", node.name)
    if value != want:
        raise _g1(f"save '{node.name}' writes {value} into '{target}', which is {want}", node.name, target)
