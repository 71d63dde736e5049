"""What a target owes refc's reference, per op: bit for bit, or within a bound.

A storage's value at exit depends on the ops in its *cone*: the nodes its save or
owner reads, transitively, and, because runs carry placeholders and owned state,
the cones of every carried storage those nodes read (``cones`` is the fixpoint).

- ``EXACT_OPS``: one correctly rounded float32 operation per element, in an order
  the op fixes (add, sub, mul, max, relu, neg, and the sums of ``sgd_momentum`` and
  ``accumulate``), or pure data movement (identity, transpose, concat, roll,
  reshape, save), or integer and float64 work that has one answer
  (``quantization_profile``'s min, max and histogram). A cone of these ops only
  is compared bit for bit.
- Everything else (tanh and exp: libm-dependent; matmul and reduce_sum: summation
  order and vectorisation; ``embedding_update``: ScatterND with duplicate ids may
  add in another order) is *inexact*. One inexact op owes
  ``refcompiler.onnx_io.compare``'s bound: ``ULP_BOUND`` float32 ULPs, or
  ``ABS_SLACK`` times the largest magnitude of the expected tensor. Errors
  compound: an op downstream of an inexact one sees inputs already off (exp
  multiplies a relative error by |x|, a matmul adds up its inputs' errors), and a
  second run starts from the first run's state. The slack is relative to the
  largest magnitude the cone reads too (an exact op after an inexact one can
  cancel: ``x - tanh(x)``), constants included. So a cone of ``m`` inexact nodes,
  after run ``k``, owes the bound times ``GROWTH ** (m * k - 1)``, at most
  ``MAX_ULPS`` ULPs (``bound_for``). A reduction of ``n`` terms summed in
  another order differs by about one rounding of its largest term per term:
  past ``SLACK_TERMS`` terms the slack grows with the cone's longest reduction
  (``reduction_terms``).
- ``ZERO_SIGN_OPS`` (max, relu, the min/max of ``quantization_profile``): IEEE 754
  and ONNX leave the sign of ``max(-0.0, +0.0)`` open, and an implementation may
  return either zero; a cone with one of them compares -0.0 and +0.0 as equal.
- NaN payloads are not specified by IEEE 754 for most operations: against the
  reference every NaN equals every NaN. Between configurations of one level (the
  same kernels) even payloads must match (``bitwise``).
"""

from __future__ import annotations

import math

import numpy as np

from specs import OpKind

from refcompiler.graph import Graph, Ref
from refcompiler.onnx_io.compare import ABS_SLACK, ULP_BOUND, ulp_distance
from refcompiler.values import same_bits

__all__ = ["EXACT_OPS", "ZERO_SIGN_OPS", "GROWTH", "MAX_ULPS", "SLACK_TERMS", "cones", "op_kinds", "inexact_nodes", "read_scale", "reduction_terms", "bound_for", "agree"]

EXACT_OPS = frozenset(
    {
        OpKind.ADD, OpKind.SUB, OpKind.MUL, OpKind.MAX, OpKind.RELU, OpKind.NEG, OpKind.IDENTITY,
        OpKind.TRANSPOSE, OpKind.CONCAT, OpKind.ROLL, OpKind.RESHAPE, OpKind.ADD_SUB, OpKind.SGD_MOMENTUM,
        OpKind.ACCUMULATE, OpKind.QUANTIZATION_PROFILE, OpKind.SAVE,
    }
)  # fmt: skip
ZERO_SIGN_OPS = frozenset({OpKind.MAX, OpKind.RELU, OpKind.QUANTIZATION_PROFILE})
GROWTH = 8
MAX_ULPS = 2**20
# ABS_SLACK (2**-20) is 8 units of rounding (2**-23) of the largest magnitude: a reduction of
# more terms owes about one unit per term (a sum in another order, a dot product vectorised)
SLACK_TERMS = 8


def cones(graph: Graph) -> dict[str, frozenset[str]]:
    """Storage written by a run (saved placeholder, owned variable) -> the names of
    the nodes its value can depend on after any number of runs."""
    direct: dict[str, set[str]] = {}
    for node in graph.nodes:
        if node.op is OpKind.SAVE:
            direct[node.target] = _nodes_behind(graph, node.name)
        for s in node.state:
            direct.setdefault(s, set()).update(_nodes_behind(graph, node.name))
    carried = set(direct)
    changed = True
    while changed:
        changed = False
        for s, nodes in direct.items():
            extra = set().union(*(direct[t] for t in _storage_read(graph, nodes) & carried)) - nodes
            if extra:
                nodes |= extra
                changed = True
    return {s: frozenset(n) for s, n in direct.items()}


def _nodes_behind(graph: Graph, name: str) -> set[str]:
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo += [r.name for r in graph.node_by_name[n].inputs if not graph.is_storage(r)]
    return seen


def _storage_read(graph: Graph, nodes: set[str]) -> set[str]:
    out: set[str] = set()
    for n in nodes:
        node = graph.node_by_name[n]
        out |= {r.name for r in node.inputs if graph.is_storage(r)} | set(node.state)
    return out


def op_kinds(graph: Graph, nodes: frozenset[str]) -> frozenset[OpKind]:
    return frozenset(graph.node_by_name[n].op for n in nodes)


def read_scale(graph: Graph, nodes: frozenset[str], values: dict[str, np.ndarray]) -> float:
    """The largest finite float magnitude among the storage ``nodes`` read, in ``values``."""
    best = 0.0
    for name in _storage_read(graph, set(nodes)):
        a = values.get(name)
        if a is not None and a.dtype.kind == "f" and a.size:
            finite = a[np.isfinite(a)]
            best = max(best, float(np.abs(finite).max()) if finite.size else 0.0)
    return best


def inexact_nodes(graph: Graph, nodes: frozenset[str]) -> int:
    """The inexact nodes of a cone, an ``exp`` counted twice: it multiplies the
    relative error of its input by |x| (up to 88 in float32), which one growth step
    does not cover once a run carries an error into the next."""
    return sum((graph.node_by_name[n].op not in EXACT_OPS) * (2 if graph.node_by_name[n].op is OpKind.EXP else 1) for n in nodes)


def reduction_terms(graph: Graph, nodes: frozenset[str]) -> int:
    """The most terms one reduction of the cone adds up (a ``reduce_sum``'s
    reduced elements, a ``matmul``'s inner dimension, an ``embedding_update``'s
    ids), at least 1: a sum of n terms in another order may differ by about n
    units of rounding of its largest term, which a fixed slack does not cover
    once tensors are large (``refc fuzz --max-dim``)."""
    from refcompiler.verifier import infer_types

    types = infer_types(graph)

    def shape(ref: Ref) -> tuple[int, ...]:
        storage = graph.storage_by_name.get(ref.name)
        return storage.shape if storage is not None and ref.index is None else types[(ref.name, ref.result)].shape

    most = 1
    for name in nodes:
        node = graph.node_by_name[name]
        if node.op is OpKind.REDUCE_SUM:
            dims = shape(node.inputs[0])
            axis = node.attr("axis")
            axes = range(len(dims)) if axis is None else [axis] if isinstance(axis, int) else axis
            most = max(most, math.prod(dims[a % len(dims)] for a in axes) if dims else 1)  # type: ignore[union-attr]
        elif node.op is OpKind.MATMUL:
            dims = shape(node.inputs[0])
            most = max(most, dims[-1] if dims else 1)
        elif node.op is OpKind.EMBEDDING_UPDATE:
            most = max(most, math.prod(shape(node.inputs[0])))
    return most


def bound_for(inexact: int, run: int) -> float:
    """The factor on the one-op bound for ``inexact`` inexact nodes after run ``run``."""
    return float(min(GROWTH ** max(inexact * run - 1, 0), MAX_ULPS // ULP_BOUND))


def agree(
    got: np.ndarray, want: np.ndarray, ops: frozenset[OpKind], *, bitwise: bool = False, factor: float = 1.0, scale: float = 0.0,
    terms: int = 1,
) -> tuple[bool, int]:
    """(whether ``got`` may stand for ``want`` given the ops behind it, ULP
    distance); ``factor`` scales the one-op bound (``bound_for``); ``scale``: the
    largest magnitude the cone read (its absolute slack is relative to that or to
    ``want``'s, whichever is larger: ``x - tanh(x)`` cancels, and the error tanh
    made relative to x is then many ULPs of the small result); ``terms``: the
    cone's longest reduction (``reduction_terms``), past ``SLACK_TERMS`` terms
    the slack grows with it."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return False, 2**32
    if bitwise:
        ok = same_bits(got, want)
        return ok, 0 if ok or got.dtype != np.float32 else ulp_distance(got, want)
    if got.dtype.kind != "f":
        return same_bits(got, want), 0
    got, want = _canonical(got, ops), _canonical(want, ops)
    if ops <= EXACT_OPS:
        ok = same_bits(got, want)
        return ok, 0 if ok else ulp_distance(got, want)
    return _within(got, want, factor, scale, max(1.0, terms / SLACK_TERMS))


def _within(got: np.ndarray, want: np.ndarray, factor: float, read_scale: float, length: float = 1.0) -> tuple[bool, int]:
    ulps = ulp_distance(got, want)
    if ulps <= ULP_BOUND * factor:
        return True, ulps
    finite = np.isfinite(want)
    if not np.array_equal(np.where(finite, 0, got), np.where(finite, 0, want), equal_nan=True):
        return False, ulps
    scale = max(float(np.abs(want[finite]).max()) if finite.any() else 0.0, read_scale)
    with np.errstate(invalid="ignore"):
        close = np.abs(got.astype(np.float64) - want.astype(np.float64)) <= ABS_SLACK * factor * length * scale
    return bool(close[finite].all()), ulps


def _canonical(a: np.ndarray, ops: frozenset[OpKind]) -> np.ndarray:
    a = np.where(np.isnan(a), np.array(np.nan, a.dtype), a)
    if ops & ZERO_SIGN_OPS:
        a = np.where(a == 0, np.array(0, a.dtype), a)
    return a
