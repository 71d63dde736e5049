"""A greedy graph-level reducer, run after Hypothesis's own shrinking.

Hypothesis shrinks the *choices* a graph was drawn from; a choice that no
longer fits after an earlier one shrank often makes it keep extra nodes. This
reducer edits the graph itself and keeps an edit whenever the graph stays
acceptable (``acceptable``: valid, or breaking exactly the expected invariant,
the ownership rules judged by ``fuzz.ownership``, not by the verifier
that may be under test) and still fails the same way (``still_fails``, typically "same signature").
Edits, smallest result first:

- ``drop_node``: remove a node; every use of its results reads a fresh
  placeholder of the same type instead; its owned state goes with it;
- ``bypass_node``: remove a node whose users can read one of its inputs
  instead (same type), keeping the graph's storage structure;
- ``collapse_view``: a reshape of a reshape reads the inner one's input
  directly (a reshape keeps the element order, so the value is the same), and
  the inner one goes when nothing else reads it;
- ``drop_storage``: remove storage that nothing refers to;
- ``simplify_op``: give a node (no state, no view, no effect) an op of an
  earlier kind in ``OpKind`` order with the same arity, attributes at their
  defaults, so that failures of one bug converge on one op at the fault.

The edits that leave what the graph computes alone come first (``untidy``:
drop a dead node, i.e. one without effect whose results nothing reads;
bypass a no-op view, a reshape to its input's own shape; drop unused
storage), so that a case short of the attempt budget is still free of them.
It repeats until no edit is kept (a local minimum: removing any single node
loses the failure, and ``untidy`` finds nothing unless the failure needs it)
or ``max_attempts`` edits were tried.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterator

from specs import Dtype, OpKind, TensorType

from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind
from refcompiler.spec import spec_of
from refcompiler.verifier import check_structure, infer_types

from fuzz.g1 import breaks_g1
from fuzz.ownership import broken_rules

__all__ = [
    "reduce_graph", "graph_size", "drop_node", "bypass_node", "collapse_view", "drop_storage", "candidates", "untidy", "simplify_op",
    "broken_invariants", "valid", "breaks_only",
]


_KIND_RANK = {kind: i for i, kind in enumerate(OpKind)}


def graph_size(graph: Graph) -> tuple[int, int, int, int]:
    """The order the reducer minimises: nodes, then storage, then elements,
    then the op kinds' ranks in ``OpKind`` order."""
    return (len(graph.nodes), len(graph.storage), sum(s.size for s in graph.storage), sum(_KIND_RANK[n.op] for n in graph.nodes))


def _fresh_name(graph: Graph, base: str) -> str:
    taken = set(graph.storage_by_name) | set(graph.node_by_name)
    k = 0
    while f"{base}{k}" in taken:
        k += 1
    return f"{base}{k}"


def _types(graph: Graph) -> dict[tuple[str, int], TensorType]:
    """Result types by the verifier's inference, ``{}`` when it cannot infer
    them (a graph breaking G-1 being reduced: the edits that need types are
    then not made). Inference assumes the structure checked; it failing on
    what a structure check under test let through means no types too."""
    if next(iter(check_structure(graph)), None) is not None:
        return {}
    try:
        return infer_types(graph)
    except Exception:
        return {}


def _rewire(nodes: list[Node], old: Ref, new: Ref) -> list[Node]:
    """Every input equal to ``old`` (or naming the same single result) becomes ``new``."""
    out = []
    for n in nodes:
        inputs = tuple(new if (r.name == old.name and r.result == old.result) else r for r in n.inputs)
        out.append(n if inputs == n.inputs else replace(n, inputs=inputs))
    return out


def drop_node(graph: Graph, name: str) -> Graph | None:
    """``graph`` without node ``name``; readers of its results read fresh
    placeholders instead. ``None`` when a used result has rank 0 (storage has
    at least one dimension) or the graph's types cannot be inferred."""
    node = graph.node_by_name[name]
    types = _types(graph)
    nodes = [n for n in graph.nodes if n.name != name]
    storage = [s for s in graph.storage if not (s.kind is StorageKind.OWNED and s.owner == name)]
    used = sorted({r.result for n in nodes for r in n.inputs if r.name == name})
    current = replace(graph, storage=tuple(storage), nodes=tuple(nodes))
    for k in used:
        t: TensorType | None = types.get((name, k))
        if t is None or not t.shape:
            return None
        init = Init(seed=0, low=0, high=1) if t.dtype is Dtype.INT32 else Init(seed=k)
        pname = _fresh_name(current, "cut")
        storage.append(Storage(pname, StorageKind.PLACEHOLDER, t.dtype, t.shape, init))
        multi = len(node.spec.results) > 1
        nodes = _rewire(nodes, Ref(name, k if multi else None), Ref(pname))
        current = replace(graph, storage=tuple(storage), nodes=tuple(nodes))
    return current


def bypass_node(graph: Graph, name: str) -> Iterator[Graph]:
    """``graph`` without node ``name`` (a single-result node), its readers
    reading instead one of its inputs of the result's type."""
    node = graph.node_by_name[name]
    if len(node.spec.results) != 1 or node.state:
        return
    types = _types(graph)
    result = types.get((name, 0))
    if result is None:
        return

    def type_of(r: Ref) -> TensorType | None:
        s = graph.storage_by_name.get(r.name)
        if s is not None and r.index is None:
            return TensorType(s.shape, s.dtype)
        return types.get((r.name, r.result))

    for ref in dict.fromkeys(node.inputs):
        if type_of(ref) != result:
            continue
        nodes = _rewire([n for n in graph.nodes if n.name != name], Ref(name), ref)
        yield replace(graph, nodes=tuple(nodes))


def collapse_view(graph: Graph, name: str) -> Graph | None:
    """``graph`` with reshape ``name`` reading the input of the reshape it reads,
    without that inner reshape when nothing else reads it; ``None`` when
    ``name`` is not a reshape of a reshape or the graph would not shrink."""
    node = graph.node_by_name[name]
    inner = graph.node_by_name.get(node.inputs[0].name) if node.op is OpKind.RESHAPE and node.inputs else None
    if inner is None or inner.op is not OpKind.RESHAPE or not inner.inputs:
        return None
    nodes = [replace(n, inputs=(inner.inputs[0],)) if n.name == name else n for n in graph.nodes]
    if any(r.name == inner.name for n in nodes for r in n.inputs):
        return None
    return replace(graph, nodes=tuple(n for n in nodes if n.name != inner.name))


def drop_storage(graph: Graph, name: str) -> Graph | None:
    """``graph`` without storage ``name``, if nothing refers to it."""
    for n in graph.nodes:
        if any(r.name == name for r in n.inputs) or name in n.state:
            return None
        if n.op is OpKind.SAVE and n.target == name:
            return None
    return replace(graph, storage=tuple(s for s in graph.storage if s.name != name))


def _dead(graph: Graph, node: Node) -> bool:
    """No effect (not a save, no state) and no reader of its results."""
    return node.op is not OpKind.SAVE and not node.state and not any(r.name == node.name for n in graph.nodes for r in n.inputs)


def _noop_view(graph: Graph, node: Node, types: dict[tuple[str, int], TensorType]) -> bool:
    """A reshape to the shape its input already has."""
    if node.op is not OpKind.RESHAPE or not node.inputs:
        return False
    ref = node.inputs[0]
    s = graph.storage_by_name.get(ref.name)
    source = TensorType(s.shape, s.dtype) if s is not None and ref.index is None else types.get((ref.name, ref.result))
    return source is not None and source == types.get((node.name, 0))


def _referred(graph: Graph, name: str) -> bool:
    return any(any(r.name == name for r in n.inputs) or name in n.state or (n.op is OpKind.SAVE and n.target == name) for n in graph.nodes)


def untidy(graph: Graph) -> list[str]:
    """What a minimal case has none of: dead nodes, no-op views and unused
    storage, by name (each is one edit of ``candidates``)."""
    types = _types(graph)
    found = [n.name for n in graph.nodes if _dead(graph, n) or _noop_view(graph, n, types)]
    return found + [s.name for s in graph.storage if not _referred(graph, s.name)]


def _tidy_candidates(graph: Graph) -> Iterator[Graph]:
    for name in untidy(graph):
        if name in graph.node_by_name:
            node = graph.node_by_name[name]
            if node.op is OpKind.RESHAPE:
                yield from bypass_node(graph, name)
            if _dead(graph, node):
                yield replace(graph, nodes=tuple(n for n in graph.nodes if n.name != name))
        else:
            dropped = drop_storage(graph, name)
            if dropped is not None:
                yield dropped


def _plain(spec) -> bool:  # type: ignore[no-untyped-def]
    return not (spec.state or spec.view or spec.effect or spec.kind is OpKind.SAVE)


def _name_for(graph: Graph, node: Node, kind: OpKind) -> str:
    """The name of ``node`` once its op is ``kind``: a name that says its
    op (the generator's ``roll3``) says the new one (``relu3``, or a fresh
    ``relu<k>`` when that is taken); any other name is kept."""
    digits = node.name[len(node.op.value):]
    if not (node.name.startswith(node.op.value) and digits.isdigit()):
        return node.name
    new = f"{kind.value}{digits}"
    return new if new not in graph.node_by_name and new not in graph.storage_by_name else _fresh_name(graph, kind.value)


def simplify_op(graph: Graph, name: str, limit: int = 2, acceptable: Callable[[Graph], bool] | None = None) -> Iterator[Graph]:
    """Graphs with node ``name`` given an earlier op kind of the same arity
    (attributes at their defaults), earliest first, at most ``limit``, each
    ``acceptable`` (default ``valid``; a reducer of an invalid case passes its
    own); a name that says its op says the new one (``_name_for``)."""
    acceptable = valid if acceptable is None else acceptable
    node = graph.node_by_name[name]
    if not _plain(node.spec):
        return
    found = 0
    for kind in list(OpKind)[: _KIND_RANK[node.op]]:
        spec = spec_of(kind)
        arity_fits = len(node.inputs) >= 1 if spec.variadic else len(node.inputs) == len(spec.inputs)
        if not _plain(spec) or not arity_fits or len(spec.results) != len(node.spec.results):
            continue
        new = _name_for(graph, node, kind)
        nodes = [replace(n, op=kind, attrs=(), name=new) if n.name == name else n for n in graph.nodes]
        if new != name:
            nodes = [replace(n, inputs=tuple(Ref(new, r.result) if r.name == name else r for r in n.inputs)) for n in nodes]
        candidate = graph.with_nodes(tuple(nodes))
        if acceptable(candidate):
            yield candidate
            found += 1
            if found >= limit:
                return


def candidates(graph: Graph, acceptable: Callable[[Graph], bool] | None = None) -> Iterator[Graph]:
    """Every single edit of ``graph``: those that leave what it computes
    alone first (``untidy``), then later nodes first (sinks go first);
    ``acceptable``: what ``simplify_op`` keeps (default ``valid``)."""
    yield from _tidy_candidates(graph)
    for node in reversed(graph.nodes):
        dropped = drop_node(graph, node.name)
        if dropped is not None:
            yield dropped
        yield from bypass_node(graph, node.name)
        collapsed = collapse_view(graph, node.name)
        if collapsed is not None:
            yield collapsed
    for s in reversed(graph.storage):
        dropped = drop_storage(graph, s.name)
        if dropped is not None:
            yield dropped
    for node in graph.nodes:
        yield from simplify_op(graph, node.name, acceptable=acceptable)


def broken_invariants(graph: Graph) -> set[str]:
    """The invariants ``graph`` breaks: G-1 as ``fuzz.g1`` says, the ownership
    rules as ``fuzz.ownership`` says. The verifier may be the code a case
    tests (it accepts a graph it should reject, or rejects a valid one): asked
    whether a smaller graph still breaks a rule, it would answer with the bug
    (or raise), and no edit would be kept; so it is not asked."""
    broken = broken_rules(graph)
    return broken | {"G-1"} if breaks_g1(graph) else broken


def valid(graph: Graph) -> bool:
    return not broken_invariants(graph)


def breaks_only(invariant: str) -> Callable[[Graph], bool]:
    """A graph that breaks ``invariant`` and nothing else (``broken_invariants``)."""
    return lambda g: broken_invariants(g) == {invariant}


def reduce_graph(
    graph: Graph,
    still_fails: Callable[[Graph], bool],
    *,
    acceptable: Callable[[Graph], bool] = valid,
    max_attempts: int = 300,
    stop: Callable[[], bool] = lambda: False,
) -> Graph:
    """A local minimum of ``graph`` under the edits above: the smallest graph
    found that is ``acceptable`` and ``still_fails``. ``still_fails`` is only
    asked about acceptable graphs; ``graph`` itself is assumed to fail. Gives
    up (returning the smallest so far) after ``max_attempts`` calls of
    ``still_fails`` or once ``stop()`` is true."""
    attempts = 0
    improved = True
    while improved and attempts < max_attempts and not stop():
        improved = False
        for candidate in candidates(graph, acceptable):
            if graph_size(candidate) >= graph_size(graph) or not acceptable(candidate):
                continue
            attempts += 1
            if still_fails(candidate):
                graph = candidate
                improved = True
                break
            if attempts >= max_attempts or stop():
                break
    return graph
