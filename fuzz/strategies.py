"""Hypothesis strategies for graphs (DESIGN §8): ``graphs`` and ``invalid_graphs``.

``graphs()`` draws graphs that are valid by construction (the verifier accepts
every one; a test checks that): consistent shapes and dtypes, owned variables
created together with their owner, placeholders that are both read and saved
(the classic write-after-read hazard), swaps of placeholders that close save
cycles, chains and diamonds of in-place candidates, views, several results,
broadcasting, integer ids within their table.

Swarm testing: each example enables a random subset of the ops and of the
``Feature``s, so that rare combinations are not drowned by common ones. A
final step saves some of the results no node reads (unsaved, they would be
dead code that graph DCE removes before any pass could get them wrong).

Structure is drawn locally, one *move* at a time (an op from the enabled set,
then its operands among the values made so far or fresh storage), so that
Hypothesis shrinks a failing graph by deleting moves and reaches a handful of
nodes. Every op's operand recipe lives in ``BUILDERS`` (one entry per op of the
spec table, which a test checks); result types always come from the spec's
shape rule, never from the recipe.

``invalid_graphs(invariant=...)`` draws a valid graph and breaks exactly that
invariant (G-1, OWN-1..4) with one small edit.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Callable, Iterable

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from specs import OPS, Dtype, OpKind, OpSpec, ShapeError, TensorType

from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind, freeze_attrs
from refcompiler.verifier import infer_types

__all__ = [
    "Feature",
    "BUILDERS",
    "REJECTABLE",
    "graphs",
    "invalid_graphs",
]

F32 = Dtype.FLOAT32
I32 = Dtype.INT32
MAX_DIM = 4
MAX_RANK = 3
MAX_SEED = 2**16


class Feature(enum.Enum):
    """Optional structure a swarm example may enable (besides its ops)."""

    BROADCAST = "broadcast"  # binary operands of different, broadcastable shapes
    CONSTANTS = "constants"  # fresh operands may be constants, not only placeholders
    READ_SAVE = "read-save"  # saves into placeholders that nodes also read
    SAVE_CYCLE = "save-cycle"  # two saves that swap placeholders (memory edges close a cycle)
    DIAMOND = "diamond"  # a move x -> (view or elementwise, in-place candidate) -> binary join
    CHAIN = "chain"  # a move x -> op -> op (-> op): single-input ops, each reading the last


# Invariants ``invalid_graphs`` can break, each with one small edit.
REJECTABLE = ("G-1", "OWN-1", "OWN-2", "OWN-3", "OWN-4")


# ---------------------------------------------------------------------------
# The builder: mutable scratch state of one draw (not an IR value).


@dataclass(frozen=True)
class Value:
    """A value a node may read: a node result or a readable storage.

    ``id_high`` bounds an int32 value (every element is in [0, id_high)), so
    that an embedding table with at least that many rows never sees an id out
    of range.
    """

    ref: Ref
    type: TensorType
    storage: StorageKind | None = None
    id_high: int | None = None

    @property
    def is_float(self) -> bool:
        return self.type.dtype is F32

    @property
    def rank(self) -> int:
        return len(self.type.shape)


class _Builder:
    def __init__(self, draw: Callable, features: frozenset[Feature], max_nodes: int):
        self.draw = draw
        self.features = features
        self.max_nodes = max_nodes
        self.storage: list[Storage] = []
        self.nodes: list[Node] = []
        self.values: list[Value] = []
        self.saved: set[str] = set()  # placeholders that have their save
        self.id_high: dict[str, int] = {}  # int32 placeholder -> bound of its values
        self.users: set[str] = set()  # nodes whose results some node reads
        self.keep: set[str] = set()  # nodes whose unread results the final step saves

    # -- names --------------------------------------------------------------
    def node_name(self, kind: OpKind) -> str:
        return f"{kind.value}{len(self.nodes)}"

    def storage_name(self, kind: StorageKind) -> str:
        prefix = {StorageKind.PLACEHOLDER: "p", StorageKind.CONSTANT: "c"}[kind]
        return f"{prefix}{len(self.storage)}"

    # -- storage --------------------------------------------------------------
    def seed(self) -> int:
        return self.draw(st.integers(0, MAX_SEED))

    def new_storage(self, t: TensorType, kind: StorageKind, *, id_high: int | None = None, readable: bool = True) -> Value:
        """Fresh placeholder or constant of type ``t`` (rank >= 1) with a seeded value."""
        assert t.shape, "storage has at least one dimension"
        if t.dtype is I32:
            high = id_high if id_high is not None else 1
            init = Init(seed=self.seed(), low=0, high=high)
        else:
            init = Init(seed=self.seed())
        s = Storage(name=self.storage_name(kind), kind=kind, dtype=t.dtype, shape=t.shape, init=init)
        self.storage.append(s)
        value = Value(Ref(s.name), t, kind, init.high if t.dtype is I32 else None)
        if kind is StorageKind.PLACEHOLDER and t.dtype is I32:
            self.id_high[s.name] = value.id_high or 1
        if readable:
            self.values.append(value)
        return value

    def fresh(self, t: TensorType, *, id_high: int | None = None) -> Value:
        """A fresh operand: a placeholder, or a constant when the swarm allows."""
        kind = StorageKind.PLACEHOLDER
        if Feature.CONSTANTS in self.features and self.draw(st.booleans()):
            kind = StorageKind.CONSTANT
        return self.new_storage(t, kind, id_high=id_high)

    def owned(self, owner: str, state_name: str, t: TensorType) -> str:
        name = f"{owner}.{state_name}"
        init = Init(seed=self.seed()) if self.draw(st.booleans()) else None
        self.storage.append(Storage(name=name, kind=StorageKind.OWNED, dtype=t.dtype, shape=t.shape, init=init, owner=owner))
        return name

    # -- operands -------------------------------------------------------------
    def pick(self, want: Callable[[Value], bool], fresh: Callable[[], Value] | None) -> Value:
        """The result of ``fresh()`` (one time in three), or an existing value
        satisfying ``want``: node results first, most recent first (chains of
        activations are what buffer sharing works on; see also
        ``activation``), then storage. Shrinking goes to fresh storage, which
        cuts the node loose from earlier ones so that they can be deleted."""
        ok = [v for v in reversed(self.values) if want(v)]
        cands = [v for v in ok if v.storage is None] + [v for v in ok if v.storage is not None]
        if fresh is not None and (not cands or self.draw(_FRESH)):
            return fresh()
        if not cands:
            raise _NoOperand()
        return cands[self.draw(st.integers(0, len(cands) - 1))]

    def activation(self, want: Callable[[Value], bool], make: Callable[[], Value], otherwise: Callable[[], Value]) -> Value:
        """An operand that is, most of the time, a node result (an activation:
        the only values buffer sharing may overwrite) satisfying ``want``,
        most recent first; ``make()`` when there is none. Otherwise (and
        when shrinking: index 0) ``otherwise()``, fresh storage included."""
        if not self.draw(_ACTIVATION):
            return otherwise()
        acts = [v for v in reversed(self.values) if v.storage is None and want(v)]
        if not acts:
            return make()
        return acts[self.draw(st.integers(0, len(acts) - 1))]

    def produced(self, t: TensorType, enabled: list[OpKind]) -> Value:
        """A new activation of type ``t`` (float): an elementwise op of the
        enabled set (``neg`` when none is) on fresh storage."""
        ops = [k for k in _UNARY if k in enabled and k is not OpKind.IDENTITY] or [OpKind.NEG]
        kind = self.draw(st.sampled_from(ops))
        self.add_node(kind, [self.fresh(t)])
        return self.values[-1]

    def shape(self, *, min_rank: int = 1, max_rank: int = MAX_RANK, first: int = 1) -> tuple[int, ...]:
        """A shape; ``first``: the least size of the first axis."""
        dims = list(self.draw(st.lists(st.integers(1, MAX_DIM), min_size=min_rank, max_size=max_rank)))
        if dims and dims[0] < first:
            dims[0] = self.draw(st.integers(first, MAX_DIM))
        return tuple(dims)

    def any_float(self, *, min_rank: int = 0) -> Value:
        return self.pick(lambda v: v.is_float and v.rank >= min_rank, lambda: self.fresh(TensorType(self.shape(), F32)))

    def any_value(self, *, min_rank: int = 0) -> Value:
        return self.pick(lambda v: v.rank >= min_rank, lambda: self.fresh(TensorType(self.shape(), F32)))

    def of_type(self, t: TensorType, *, id_high: int | None = None) -> Value:
        """A value of exactly type ``t`` (fresh storage needs rank >= 1)."""
        if t.dtype is I32:
            bound = id_high if id_high is not None else 1
            ok: Callable[[Value], bool] = lambda v: v.type == t and (v.id_high or 0) <= bound
        else:
            ok = lambda v: v.type == t
        fresh = (lambda: self.fresh(t, id_high=id_high)) if t.shape else None
        if fresh is None and not any(ok(v) for v in self.values):
            raise _NoOperand()
        return self.pick(ok, fresh)

    # -- nodes ----------------------------------------------------------------
    def add_node(self, kind: OpKind, inputs: Iterable[Value], *, state: tuple[str, ...] = (), attrs: dict[str, object] | None = None, name: str | None = None) -> Node:
        """Append a node; its result types come from the spec's shape rule."""
        spec = OPS[kind]
        inputs = tuple(inputs)
        node = Node(
            name=name or self.node_name(kind),
            op=kind,
            inputs=tuple(v.ref for v in inputs),
            state=state,
            attrs=freeze_attrs(attrs or {}),
        )
        state_types = [self.storage_type(s) for s in state]
        results = spec.shape_rule([v.type for v in inputs], state_types, _attr_values(spec, node))
        self.nodes.append(node)
        self.users.update(v.ref.name for v in inputs)
        # drawn with the node, not after the whole graph (see _SAVE_SINK)
        if results and self.draw(_SAVE_SINK):
            self.keep.add(node.name)
        multi = len(results) > 1
        high = _int_bound(kind, inputs)
        for k, t in enumerate(results):
            self.values.append(Value(Ref(node.name, k if multi else None), t, None, high if t.dtype is I32 else None))
        return node

    def value_of(self, node: str) -> Value:
        """The (single) result of ``node``."""
        return next(v for v in self.values if v.ref == Ref(node))

    def storage_type(self, name: str) -> TensorType:
        s = next(s for s in self.storage if s.name == name)
        return TensorType(s.shape, s.dtype)

    def save(self, value: Value, target: str) -> Node:
        self.saved.add(target)
        return self.add_node(OpKind.SAVE, [value], attrs={"target": target})

    def graph(self, name: str) -> Graph:
        return Graph(name=name, storage=tuple(self.storage), nodes=tuple(self.nodes))


class _NoOperand(Exception):
    """A recipe found no operand it can use; the move is skipped."""


def _attr_values(spec: OpSpec, node: Node) -> dict[str, object]:
    given = dict(node.attrs)
    return {a.name: given.get(a.name, a.default) for a in spec.attrs}


def _int_bound(kind: OpKind, inputs: tuple[Value, ...]) -> int | None:
    """Ops on int32 values only move them around (identity, transpose, concat,
    roll, reshape), so the result's bound is the largest operand bound."""
    bounds = [v.id_high for v in inputs if v.id_high is not None]
    return max(bounds) if bounds else None


def _fits(spec: OpSpec, types: list[TensorType], attrs: dict[str, object] | None = None) -> bool:
    full = {a.name: a.default for a in spec.attrs} | (attrs or {})
    try:
        spec.shape_rule(types, [], full)
    except ShapeError:
        return False
    return True


# ---------------------------------------------------------------------------
# Operand recipes, one per op of the spec table.


def _broadcast_partner(b: _Builder, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with ``shape``: a suffix of it with some dims set
    to 1, or (where ``shape`` has a 1) widened."""
    if not shape:
        return b.shape()
    keep = b.draw(st.integers(1, len(shape)))
    out = []
    for d in shape[len(shape) - keep :]:
        how = b.draw(st.integers(0, 2))
        if how == 1:
            d = 1
        elif how == 2 and d == 1:
            d = b.draw(st.integers(1, MAX_DIM))
        out.append(d)
    return tuple(out)


def _binary_operands(b: _Builder, spec: OpSpec) -> tuple[Value, Value]:
    first = b.any_float()
    if Feature.BROADCAST in b.features and b.draw(st.booleans()):
        other = b.pick(
            lambda v: v.is_float and _fits(spec, [first.type, v.type]),
            lambda: b.fresh(TensorType(_broadcast_partner(b, first.type.shape), F32)),
        )
    elif first.rank == 0:
        other = b.pick(lambda v: v.type == first.type, lambda: b.fresh(TensorType(b.shape(), F32)))
    else:
        other = b.of_type(first.type)
    if b.draw(st.booleans()):
        first, other = other, first
    return first, other


def _build_binary(b: _Builder, kind: OpKind) -> None:
    b.add_node(kind, _binary_operands(b, OPS[kind]))


def _build_unary_float(b: _Builder, kind: OpKind) -> None:
    b.add_node(kind, [b.any_float()])


def _build_unary_any(b: _Builder, kind: OpKind) -> None:
    b.add_node(kind, [b.any_value()])


def _moves_along_first_axis(v: Value) -> bool:
    """Whether a stencil along the first axis (roll) moves elements of ``v``:
    with a first axis of size 1 it is the identity, and hides in-place bugs."""
    return v.rank >= 1 and v.type.shape[0] >= 2


def _build_roll(b: _Builder, kind: OpKind) -> None:
    # mostly an activation whose first axis roll actually moves along: a
    # stencil must not run in place, and only an activation could
    x = b.activation(
        _moves_along_first_axis,
        lambda: b.fresh(TensorType(b.shape(first=2), F32)),
        lambda: b.any_value(min_rank=1),
    )
    b.add_node(kind, [x])


def _build_matmul(b: _Builder, kind: OpKind) -> None:
    spec = OPS[kind]
    a = b.any_float(min_rank=1)

    def fresh_b() -> Value:
        k = a.type.shape[-1]
        rank = b.draw(st.integers(1, 3))
        if rank == 1:
            shape: tuple[int, ...] = (k,)
        elif rank == 2:
            shape = (k, b.draw(st.integers(1, MAX_DIM)))
        else:
            batch = a.type.shape[0] if a.rank == 3 else b.draw(st.integers(1, MAX_DIM))
            shape = (batch, k, b.draw(st.integers(1, MAX_DIM)))
        return b.fresh(TensorType(shape, F32))

    other = b.pick(lambda v: v.is_float and v.rank >= 1 and _fits(spec, [a.type, v.type]), fresh_b)
    b.add_node(kind, [a, other])


def _build_transpose(b: _Builder, kind: OpKind) -> None:
    x = b.any_value()
    attrs: dict[str, object] = {}
    if b.draw(st.booleans()):
        attrs["perm"] = list(b.draw(st.permutations(list(range(x.rank)))))
    b.add_node(kind, [x], attrs=attrs)


def _build_reduce_sum(b: _Builder, kind: OpKind) -> None:
    x = b.any_float()
    attrs: dict[str, object] = {}
    how = b.draw(st.integers(0, 2)) if x.rank else 0
    if how == 1:
        attrs["axis"] = b.draw(st.integers(-x.rank, x.rank - 1))
    elif how == 2:
        attrs["axis"] = sorted(b.draw(st.sets(st.integers(0, x.rank - 1), min_size=1)))
    if b.draw(st.booleans()):
        attrs["keepdims"] = b.draw(st.booleans())
    b.add_node(kind, [x], attrs=attrs)


def _build_concat(b: _Builder, kind: OpKind) -> None:
    first = b.any_value(min_rank=1)
    rank = first.rank
    axis = b.draw(st.integers(-rank, rank - 1))
    ax = axis % rank

    def same_off_axis(v: Value) -> bool:
        return (
            v.type.dtype is first.type.dtype
            and v.rank == rank
            and all(d == e for i, (d, e) in enumerate(zip(v.type.shape, first.type.shape, strict=True)) if i != ax)
        )

    def fresh_part() -> Value:
        shape = list(first.type.shape)
        shape[ax] = b.draw(st.integers(1, MAX_DIM))
        return b.fresh(TensorType(tuple(shape), first.type.dtype), id_high=first.id_high)

    parts = [first]
    for _ in range(b.draw(st.integers(0, 2))):
        parts.append(b.pick(same_off_axis, fresh_part))
    if b.draw(st.booleans()):
        parts.reverse()
    b.add_node(kind, parts, attrs={"axis": axis})


def _factor_shape(b: _Builder, size: int) -> tuple[int, ...]:
    """A random shape with ``size`` elements and 1..3 dimensions."""
    primes = []
    n, p = size, 2
    while n > 1:
        while n % p == 0:
            primes.append(p)
            n //= p
        p += 1
    dims = [1] * b.draw(st.integers(1, MAX_RANK))
    for p in primes:
        dims[b.draw(st.integers(0, len(dims) - 1))] *= p
    return tuple(dims)


def _build_reshape(b: _Builder, kind: OpKind) -> None:
    x = b.any_value()
    b.add_node(kind, [x], attrs={"shape": list(_factor_shape(b, x.type.size))})


def _build_sgd_momentum(b: _Builder, kind: OpKind) -> None:
    w = b.any_float()
    if w.rank == 0:
        g = b.pick(lambda v: v.type == w.type, None)
        v = b.pick(lambda v: v.type == w.type, None)
    else:
        g, v = b.of_type(w.type), b.of_type(w.type)
    attrs: dict[str, object] = {}
    if b.draw(st.booleans()):
        attrs["lr"] = b.draw(st.sampled_from([0.01, 0.05, 0.5]))
        attrs["mu"] = b.draw(st.sampled_from([0.9, 0.5, 0.0]))
    b.add_node(kind, [w, g, v], attrs=attrs)


def _build_quantization_profile(b: _Builder, kind: OpKind) -> None:
    x = b.any_float()
    name = b.node_name(kind)
    bins = b.draw(st.integers(1, 8))
    state = (b.owned(name, "minmax", TensorType((2,), F32)), b.owned(name, "hist", TensorType((bins,), F32)))
    attrs: dict[str, object] = {}
    if b.draw(st.booleans()):
        lo = b.draw(st.sampled_from([-4.0, -2.0, -1.0, 0.0]))
        attrs = {"lo": lo, "hi": lo + b.draw(st.sampled_from([1.0, 2.0, 8.0]))}
    b.add_node(kind, [x], state=state, attrs=attrs, name=name)


def _build_embedding_update(b: _Builder, kind: OpKind) -> None:
    name = b.node_name(kind)
    ids = b.pick(
        lambda v: v.type.dtype is I32,
        lambda: b.fresh(TensorType(b.shape(max_rank=2), I32), id_high=b.draw(st.integers(1, MAX_DIM))),
    )
    rows = (ids.id_high or 1) + b.draw(st.integers(0, 2))
    cols = b.draw(st.integers(1, 3))
    grad = b.of_type(TensorType(ids.type.shape + (cols,), F32))
    table = b.owned(name, "table", TensorType((rows, cols), F32))
    b.add_node(kind, [ids, grad], state=(table,), name=name)


def _build_accumulate(b: _Builder, kind: OpKind) -> None:
    x = b.any_float(min_rank=1)
    name = b.node_name(kind)
    acc = b.owned(name, "acc", x.type)
    b.add_node(kind, [x], state=(acc,), name=name)


def _save_target(b: _Builder, value: Value) -> str:
    """An unsaved placeholder of the value's type: one that nodes read (the
    hazard) when the swarm allows, else a fresh output."""
    high = value.id_high or 0

    def ok(s: Storage) -> bool:
        return (
            s.kind is StorageKind.PLACEHOLDER
            and s.name not in b.saved
            and TensorType(s.shape, s.dtype) == value.type
            and b.id_high.get(s.name, high) >= high
        )

    cands = [s.name for s in reversed(b.storage) if ok(s)] if Feature.READ_SAVE in b.features else []
    i = b.draw(st.integers(0, len(cands)))
    if i < len(cands):
        return cands[i]
    readable = Feature.READ_SAVE in b.features
    return b.new_storage(value.type, StorageKind.PLACEHOLDER, id_high=value.id_high, readable=readable).ref.name


def _build_save(b: _Builder, kind: OpKind) -> None:
    if Feature.SAVE_CYCLE in b.features and len(b.nodes) + 2 <= b.max_nodes and b.draw(st.booleans()):
        _build_swap(b)
        return
    value = b.pick(lambda v: v.rank >= 1, lambda: b.fresh(TensorType(b.shape(), F32)))
    b.save(value, _save_target(b, value))


def _build_swap(b: _Builder) -> None:
    """save(p -> q) and save(q -> p): each save reads the other's target, so the
    memory edges form a cycle the compiler must break first (DESIGN §4)."""

    def unsaved_placeholder(v: Value) -> bool:
        return v.storage is StorageKind.PLACEHOLDER and v.ref.name not in b.saved and v.type.dtype is F32

    p = b.pick(unsaved_placeholder, lambda: b.new_storage(TensorType(b.shape(), F32), StorageKind.PLACEHOLDER))
    q = b.pick(
        lambda v: unsaved_placeholder(v) and v.type == p.type and v.ref != p.ref,
        lambda: b.new_storage(p.type, StorageKind.PLACEHOLDER),
    )
    b.save(p, q.ref.name)
    b.save(q, p.ref.name)


_UNARY = (OpKind.RELU, OpKind.NEG, OpKind.TANH, OpKind.EXP, OpKind.IDENTITY)
_BINARY = (OpKind.ADD, OpKind.SUB, OpKind.MUL, OpKind.MAX)


def _build_diamond(b: _Builder, enabled: list[OpKind]) -> None:
    """x -> left (a view of x, or elementwise) and right (elementwise: a
    candidate to overwrite x in place), then join(left, right). The hazard
    of buffer sharing: right may reuse x only if nothing reads x later,
    also through left's view. Ops come from the enabled set where it has any."""
    if len(b.nodes) + 3 > b.max_nodes:
        return
    unary = [k for k in _UNARY if k in enabled] or [OpKind.NEG]
    binary = [k for k in _BINARY if k in enabled] or [OpKind.ADD]
    # mostly an activation: only those may be overwritten in place (a fourth
    # node makes one when there is none and room is left)
    room = len(b.nodes) + 4 <= b.max_nodes
    x = b.activation(
        lambda v: v.is_float and v.rank >= 1,
        (lambda: b.produced(TensorType(b.shape(), F32), enabled)) if room else (lambda: b.fresh(TensorType(b.shape(), F32))),
        lambda: b.any_float(min_rank=1),
    )
    # a view two times in three: reads through a view are what sharing easily misses
    view = OpKind.RESHAPE in enabled and b.draw(_VIEW)
    left_kind = OpKind.RESHAPE if view else b.draw(st.sampled_from(unary))
    attrs = {"shape": list(x.type.shape)} if left_kind is OpKind.RESHAPE else {}
    left = b.add_node(left_kind, [x], attrs=attrs)
    right = b.add_node(b.draw(st.sampled_from(unary)), [x])
    pair = [b.value_of(left.name), b.value_of(right.name)]
    if b.draw(st.booleans()):
        pair.reverse()
    b.add_node(b.draw(st.sampled_from(binary)), pair)


# Single-input ops a chain may use: elementwise ones run in place; a stencil,
# a transpose or a reduction must not.
_CHAIN_OPS = (OpKind.RELU, OpKind.NEG, OpKind.TANH, OpKind.EXP, OpKind.IDENTITY, OpKind.ROLL, OpKind.TRANSPOSE, OpKind.RESHAPE, OpKind.REDUCE_SUM)


def _build_chain(b: _Builder, enabled: list[OpKind]) -> None:
    """x -> op1 -> op2 (-> op3), each op reading the previous result only: the
    shape in which a result may take over its input's buffer, and where an op
    that must not run in place (a stencil) shows it."""
    ops = [k for k in _CHAIN_OPS if k in enabled] or [OpKind.NEG]
    length = b.draw(st.integers(2, 3))
    if len(b.nodes) + length > b.max_nodes:
        return
    # mostly an activation whose first axis a stencil moves along: the first
    # op of the chain may then overwrite it in place too
    x = b.activation(
        lambda v: v.is_float and _moves_along_first_axis(v),
        lambda: b.fresh(TensorType(b.shape(first=2), F32)),
        lambda: b.any_float(min_rank=1),
    )
    for _ in range(length):
        kind = b.draw(st.sampled_from(ops))
        if kind in (OpKind.ROLL, OpKind.TRANSPOSE, OpKind.RESHAPE) and x.rank == 0:
            kind = OpKind.NEG
        BUILDERS[kind](_Only(b, x), kind)
        x = b.values[-1]


class _Only:
    """A builder whose every operand pick returns ``value`` (for a chain)."""

    def __init__(self, b: _Builder, value: Value):
        self._b = b
        self._value = value

    def __getattr__(self, name: str) -> object:
        return getattr(self._b, name)

    def pick(self, want: Callable[[Value], bool], fresh: Callable[[], Value] | None) -> Value:
        return self._value

    def any_float(self, *, min_rank: int = 0) -> Value:
        return self._value

    def any_value(self, *, min_rank: int = 0) -> Value:
        return self._value


def _build_outputs(b: _Builder) -> None:
    """Save results no node reads (rank >= 1) into placeholders, those of
    the nodes drawn to keep."""
    sinks = [v for v in b.values if v.storage is None and v.ref.name not in b.users and v.rank >= 1]
    for v in sinks:
        if len(b.nodes) >= b.max_nodes:
            return
        if v.ref.name in b.keep:
            b.save(v, _save_target(b, v))


Builder = Callable[[_Builder, OpKind], None]

BUILDERS: dict[OpKind, Builder] = {
    OpKind.ADD: _build_binary,
    OpKind.SUB: _build_binary,
    OpKind.MUL: _build_binary,
    OpKind.MAX: _build_binary,
    OpKind.ADD_SUB: _build_binary,
    OpKind.RELU: _build_unary_float,
    OpKind.NEG: _build_unary_float,
    OpKind.TANH: _build_unary_float,
    OpKind.EXP: _build_unary_float,
    OpKind.IDENTITY: _build_unary_any,
    OpKind.MATMUL: _build_matmul,
    OpKind.TRANSPOSE: _build_transpose,
    OpKind.REDUCE_SUM: _build_reduce_sum,
    OpKind.CONCAT: _build_concat,
    OpKind.ROLL: _build_roll,
    OpKind.RESHAPE: _build_reshape,
    OpKind.SGD_MOMENTUM: _build_sgd_momentum,
    OpKind.QUANTIZATION_PROFILE: _build_quantization_profile,
    OpKind.EMBEDDING_UPDATE: _build_embedding_update,
    OpKind.ACCUMULATE: _build_accumulate,
    OpKind.SAVE: _build_save,
}


# ---------------------------------------------------------------------------
# graphs()


def graphs(
    *,
    ops: Iterable[OpKind] | None = None,
    features: Iterable[Feature] | None = None,
    min_nodes: int = 1,
    max_nodes: int = 10,
    swarm: bool = True,
) -> st.SearchStrategy[Graph]:
    """Valid graphs (the verifier accepts every one).

    ``ops`` / ``features``: the universe a swarm example draws its subset from
    (default: every op of the spec table, every ``Feature``); with
    ``swarm=False`` every example enables all of them. The graph has between
    ``min_nodes`` and ``max_nodes`` nodes (saves included).
    """
    universe = tuple(OPS) if ops is None else tuple(dict.fromkeys(ops))
    feats = tuple(Feature) if features is None else tuple(dict.fromkeys(features))
    for k in universe:
        if not isinstance(k, OpKind):
            raise InvalidArgument(f"ops must be OpKind members, got {k!r}")
    for f in feats:
        if not isinstance(f, Feature):
            raise InvalidArgument(f"features must be Feature members, got {f!r}")
    if not universe:
        raise InvalidArgument("ops must name at least one op")
    if not 1 <= min_nodes <= max_nodes:
        raise InvalidArgument(f"need 1 <= min_nodes <= max_nodes, got min_nodes={min_nodes}, max_nodes={max_nodes}")
    return _graphs(universe, feats, min_nodes, max_nodes, swarm)


# Fresh storage or an existing value, for an operand: fresh is index 0 (shrinking).
_FRESH = st.sampled_from([True, False, False])

# Whether the final step saves an unused result: two in three, shrinking to
# no. Drawn with each node, not after the whole graph: a choice drawn after a
# whole graph leans towards its first option (Hypothesis replays parts of
# earlier examples, and a choice that no longer fits becomes the simplest
# one), so that many graphs would end as dead code, which graph DCE removes
# before any pass could get it wrong; and deleting a move deletes its flag.
_SAVE_SINK = st.sampled_from([False, True, True])

# Whether a diamond's, a chain's or a stencil's input must be an activation: three in
# four, shrinking to any operand.
_ACTIVATION = st.sampled_from([False, True, True, True])

# Whether a diamond's left branch is a view (when reshape is enabled).
_VIEW = st.sampled_from([False, True, True])

# Swarm: whether to disable a feature. The patterns that build hazards
# (diamonds, chains, placeholders read and saved) are kept three times in
# four, the others half the time; shrinking (to False) enables everything.
_DROP_PATTERN = st.sampled_from([False, False, False, True])
_PATTERNS = frozenset({Feature.DIAMOND, Feature.CHAIN, Feature.READ_SAVE})

# Continue-or-stop flag of the move loop: stop is index 0, so shrinking stops early.
_MORE = st.sampled_from([False] + [True] * 7)


@st.composite
def _graphs(draw: Callable, universe: tuple[OpKind, ...], feats: tuple[Feature, ...], min_nodes: int, max_nodes: int, swarm: bool) -> Graph:
    # Swarm: each op or feature is *disabled* by a True draw, so shrinking
    # (towards False) enables everything and then picks the table's first ops.
    enabled = [k for k in universe if not (swarm and draw(st.booleans()))] or list(universe)
    features = frozenset(f for f in feats if not (swarm and draw(_DROP_PATTERN if f in _PATTERNS else st.booleans())))
    b = _Builder(draw, features, max_nodes)
    # a diamond counts as two moves' worth of choice: it is three nodes of structure
    moves: list[OpKind | Feature] = list(enabled)
    for pattern in (Feature.DIAMOND, Feature.CHAIN):
        if pattern in features:
            moves += [pattern] * 3
    # The final step saves unused results (what is not saved is dead code, which
    # graph DCE removes before any pass could get it wrong); leave it room.
    outputs = OpKind.SAVE in universe
    move_cap = max(min_nodes, max_nodes - 2) if outputs else max_nodes
    attempts = 0
    while len(b.nodes) < move_cap and attempts < 4 * max_nodes:
        attempts += 1
        # drawn before every move, the first included, so that shrinking can
        # delete any move the same way (the flag is ignored below min_nodes)
        if not draw(_MORE) and len(b.nodes) >= min_nodes:
            break
        kind = draw(st.sampled_from(moves))
        try:
            if kind is Feature.DIAMOND:
                _build_diamond(b, enabled)
            elif kind is Feature.CHAIN:
                _build_chain(b, enabled)
            else:
                BUILDERS[kind](b, kind)  # type: ignore[index]
        except _NoOperand:
            continue
    if outputs:
        _build_outputs(b)
    while len(b.nodes) < min_nodes:  # only when every move found no operand
        _build_unary_float(b, OpKind.NEG)
    return b.graph("fuzz")


# ---------------------------------------------------------------------------
# invalid_graphs()


def invalid_graphs(invariant: str, *, max_nodes: int = 8) -> st.SearchStrategy[Graph]:
    """Graphs that break exactly ``invariant`` (one of ``REJECTABLE``): a valid
    graph from ``graphs()`` plus one small edit. Every such graph loads through
    ``graph_from_doc`` (every name resolves), so it can be a corpus case."""
    if invariant not in REJECTABLE:
        raise InvalidArgument(f"invariant must be one of {', '.join(REJECTABLE)}, got {invariant!r}")
    return _invalid(invariant, max_nodes)


@st.composite
def _invalid(draw: Callable, invariant: str, max_nodes: int) -> Graph:
    # the flavour first: a choice drawn after a whole graph leans towards its
    # first option (Hypothesis replays parts of earlier examples, and a choice
    # that no longer fits becomes the simplest one); each flavour gets its share
    breaker = draw(st.sampled_from(_BREAKERS[invariant]))
    graph = draw(graphs(max_nodes=max_nodes))
    return breaker(_Editor(draw, graph))


class _Editor:
    """Adds storage and nodes with fresh names to a valid graph."""

    def __init__(self, draw: Callable, graph: Graph):
        self.draw = draw
        self.graph = graph
        self.storage = list(graph.storage)
        self.nodes = list(graph.nodes)
        self.types = infer_types(graph)
        self.count = 0

    def name(self, base: str) -> str:
        taken = {s.name for s in self.storage} | {n.name for n in self.nodes}
        while True:
            self.count += 1
            name = f"{base}{self.count}"
            if name not in taken:
                return name

    def shape(self) -> tuple[int, ...]:
        return tuple(self.draw(st.lists(st.integers(1, MAX_DIM), min_size=1, max_size=MAX_RANK)))

    def storage_of(self, kind: StorageKind, shape: tuple[int, ...], dtype: Dtype = F32, *, owner: str | None = None) -> str:
        init = Init(seed=self.draw(st.integers(0, MAX_SEED)))
        s = Storage(name=self.name({StorageKind.PLACEHOLDER: "bad_p", StorageKind.CONSTANT: "bad_c", StorageKind.OWNED: "bad_o"}[kind]),
                    kind=kind, dtype=dtype, shape=shape, init=init, owner=owner)
        self.storage.append(s)
        return s.name

    def node(self, op: OpKind, inputs: Iterable[Ref | str], *, state: tuple[str, ...] = (), attrs: dict[str, object] | None = None, name: str | None = None) -> str:
        refs = tuple(r if isinstance(r, Ref) else Ref(r) for r in inputs)
        node = Node(name=name or self.name("bad"), op=op, inputs=refs, state=state, attrs=freeze_attrs(attrs or {}))
        self.nodes.append(node)
        return node.name

    def existing(self, want: Callable[[Storage], bool]) -> Storage | None:
        cands = [s for s in self.storage if want(s)]
        if not cands or not self.draw(st.booleans()):
            return None
        return self.draw(st.sampled_from(cands))

    def result(self) -> Graph:
        return replace(self.graph, storage=tuple(self.storage), nodes=tuple(self.nodes))


def _g1_cycle(e: _Editor) -> Graph:
    a, b = e.name("bad"), e.name("bad")
    if e.draw(st.booleans()):
        e.node(OpKind.NEG, [a], name=a)  # reads itself
    else:
        e.node(OpKind.NEG, [b], name=a)
        e.node(OpKind.NEG, [a], name=b)
    return e.result()


def _g1_arity(e: _Editor) -> Graph:
    e.node(OpKind.ADD, [e.storage_of(StorageKind.PLACEHOLDER, e.shape())])
    return e.result()


def _g1_shape(e: _Editor) -> Graph:
    d = e.draw(st.integers(2, MAX_DIM))
    x = e.storage_of(StorageKind.PLACEHOLDER, (d,))
    y = e.storage_of(StorageKind.PLACEHOLDER, (d + 1,))
    e.node(e.draw(st.sampled_from([OpKind.ADD, OpKind.MUL, OpKind.ADD_SUB])), [x, y])
    return e.result()


def _g1_dtype(e: _Editor) -> Graph:
    ids = e.storage_of(StorageKind.PLACEHOLDER, e.shape(), I32)
    e.node(e.draw(st.sampled_from([OpKind.RELU, OpKind.EXP, OpKind.REDUCE_SUM])), [ids])
    return e.result()


def _g1_attr(e: _Editor) -> Graph:
    x = e.storage_of(StorageKind.PLACEHOLDER, e.shape())
    size = e.storage[-1].size
    if e.draw(st.booleans()):
        e.node(OpKind.RESHAPE, [x], attrs={"shape": [size + 1]})
    else:
        e.node(OpKind.ROLL, [x], attrs={"shift": 2})  # roll has no attributes
    return e.result()


def _g1_save_type(e: _Editor) -> Graph:
    shape = e.shape()
    x = e.storage_of(StorageKind.PLACEHOLDER, shape)
    target = e.storage_of(StorageKind.PLACEHOLDER, shape + (2,))
    e.node(OpKind.SAVE, [x], attrs={"target": target})
    return e.result()


def _g1_result_index(e: _Editor) -> Graph:
    producers = [n for n in e.nodes if OPS[n.op].results]
    if not producers:
        return _g1_arity(e)
    n = e.draw(st.sampled_from(producers))
    e.node(OpKind.IDENTITY, [Ref(n.name, len(OPS[n.op].results) + 1)])
    return e.result()


def _own1_orphan(e: _Editor) -> Graph:
    e.storage_of(StorageKind.OWNED, e.shape(), owner=None)
    return e.result()


def _own1_unlisted(e: _Editor) -> Graph:
    if not e.nodes:
        return _own1_orphan(e)
    owner = e.draw(st.sampled_from(e.nodes)).name
    e.storage_of(StorageKind.OWNED, e.shape(), owner=owner)
    return e.result()


def _an_owned(e: _Editor) -> Storage:
    """An owned variable of the graph, or a fresh accumulate that owns one."""
    owned = e.existing(lambda s: s.kind is StorageKind.OWNED)
    if owned is not None:
        return owned
    shape = e.shape()
    x = e.storage_of(StorageKind.PLACEHOLDER, shape)
    name = e.name("bad_acc")
    acc = e.storage_of(StorageKind.OWNED, shape, owner=name)
    e.node(OpKind.ACCUMULATE, [x], state=(acc,), name=name)
    return e.storage[[s.name for s in e.storage].index(acc)]


def _own2_read(e: _Editor) -> Graph:
    owned = _an_owned(e)
    e.node(OpKind.IDENTITY, [owned.name])
    return e.result()


def _own2_save(e: _Editor) -> Graph:
    owned = _an_owned(e)
    e.node(OpKind.SAVE, [e.storage_of(StorageKind.PLACEHOLDER, owned.shape)], attrs={"target": owned.name})
    return e.result()


def _own2_foreign_state(e: _Editor) -> Graph:
    owned = _an_owned(e)
    e.node(OpKind.ACCUMULATE, [e.storage_of(StorageKind.PLACEHOLDER, owned.shape)], state=(owned.name,))
    return e.result()


def _a_constant(e: _Editor) -> Storage:
    c = e.existing(lambda s: s.kind is StorageKind.CONSTANT and s.dtype is F32)
    if c is not None:
        return c
    name = e.storage_of(StorageKind.CONSTANT, e.shape())
    return e.storage[-1] if e.storage[-1].name == name else next(s for s in e.storage if s.name == name)


def _own3_save(e: _Editor) -> Graph:
    c = _a_constant(e)
    e.node(OpKind.SAVE, [e.storage_of(StorageKind.PLACEHOLDER, c.shape)], attrs={"target": c.name})
    return e.result()


def _own3_state(e: _Editor) -> Graph:
    c = _a_constant(e)
    e.node(OpKind.ACCUMULATE, [e.storage_of(StorageKind.PLACEHOLDER, c.shape)], state=(c.name,))
    return e.result()


def _own4_two_saves(e: _Editor) -> Graph:
    saved = {n.target for n in e.nodes if n.op is OpKind.SAVE}
    p = e.existing(lambda s: s.name in saved and s.kind is StorageKind.PLACEHOLDER and s.dtype is F32)
    if p is None:
        target = e.storage_of(StorageKind.PLACEHOLDER, e.shape())
        p = e.storage[-1]
        e.node(OpKind.SAVE, [e.storage_of(StorageKind.PLACEHOLDER, p.shape)], attrs={"target": target})
    e.node(OpKind.SAVE, [e.storage_of(StorageKind.PLACEHOLDER, p.shape)], attrs={"target": p.name})
    return e.result()


def _own4_state(e: _Editor) -> Graph:
    p = e.existing(lambda s: s.kind is StorageKind.PLACEHOLDER and s.dtype is F32)
    if p is None:
        e.storage_of(StorageKind.PLACEHOLDER, e.shape())
        p = e.storage[-1]
    e.node(OpKind.ACCUMULATE, [e.storage_of(StorageKind.PLACEHOLDER, p.shape)], state=(p.name,))
    return e.result()


_BREAKERS: dict[str, list[Callable[[_Editor], Graph]]] = {
    "G-1": [_g1_cycle, _g1_arity, _g1_shape, _g1_dtype, _g1_attr, _g1_save_type, _g1_result_index],
    "OWN-1": [_own1_orphan, _own1_unlisted],
    "OWN-2": [_own2_read, _own2_save, _own2_foreign_state],
    "OWN-3": [_own3_save, _own3_state],
    "OWN-4": [_own4_two_saves, _own4_state],
}
