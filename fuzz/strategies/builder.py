"""The builder: the mutable scratch state of one graph draw (not an IR
value), the values a node may read, and how operands are picked.

``Builder.add_node`` gives every node its result types through the spec's
shape rule, never through the recipe that picked its operands.
"""

from __future__ import annotations

from typing import Callable, Iterable, NamedTuple

from specs import OPS, Dtype, OpKind, OpSpec, ShapeError, TensorType
from specs.opspec import FastEnum

from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind, freeze_attrs

from fuzz.strategies.draws import Draws

__all__ = ["F32", "I32", "MAX_DIM", "MAX_RANK", "MAX_SEED", "Feature", "Value", "Builder", "NoOperand", "fits"]

F32 = Dtype.FLOAT32
I32 = Dtype.INT32
MAX_DIM = 4
MAX_RANK = 3
MAX_SEED = 2**16


class Feature(FastEnum):
    """Optional structure a swarm example may enable (besides its ops);
    hashed as objects are (the builder asks ``feature in features`` often)."""

    BROADCAST = "broadcast"  # binary operands of different, broadcastable shapes
    CONSTANTS = "constants"  # fresh operands may be constants, not only placeholders
    READ_SAVE = "read-save"  # saves into placeholders that nodes also read
    SAVE_CYCLE = "save-cycle"  # two saves that swap placeholders (memory edges close a cycle)
    DIAMOND = "diamond"  # a move x -> (view or elementwise, in-place candidate) -> binary join
    CHAIN = "chain"  # a move x -> op -> op (-> op): single-input ops, each reading the last


# Each op's name (``kind.value``, read without the enum's descriptor: a name per node).
_OP_NAMES = {kind: kind.value for kind in OpKind}

_STORAGE_PREFIX = {StorageKind.PLACEHOLDER: "p", StorageKind.CONSTANT: "c"}

# Fresh storage or an existing value, for an operand: fresh is index 0 (shrinking).
_FRESH = (True, False, False)

# Whether the final step saves an unused result: two in three, shrinking to
# no. Drawn with each node, not after the whole graph: a choice drawn after a
# whole graph leans towards its first option (Hypothesis replays parts of
# earlier examples, and a choice that no longer fits becomes the simplest
# one), so that many graphs would end as dead code, which graph DCE removes
# before any pass could get it wrong; and deleting a move deletes its flag.
_SAVE_SINK = (False, True, True)

# Whether a diamond's, a chain's or a stencil's input must be an activation: three in
# four, shrinking to any operand.
_ACTIVATION = (False, True, True, True)


class Value(NamedTuple):
    """A value a node may read: a node result or a readable storage.

    ``id_high`` bounds an int32 value (every element is in [0, id_high)), so
    that an embedding table with at least that many rows never sees an id out
    of range. Immutable; a named tuple rather than a frozen dataclass because
    one is made per storage and node result, a quarter of the cost.
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


class Builder:
    """The mutable scratch state of one graph draw: storage, nodes and the
    values made so far; ``draws`` makes every choice."""

    def __init__(self, draws: Draws, features: frozenset[Feature], max_nodes: int, max_dim: int = MAX_DIM):
        self.draws = draws
        self.features = features
        self.max_nodes = max_nodes
        self.max_dim = max_dim  # the largest size drawn for an axis (at least 2: some recipes need a first axis of 2)
        self.storage: list[Storage] = []
        self.nodes: list[Node] = []
        self.values: list[Value] = []
        self.saved: set[str] = set()  # placeholders that have their save
        self.id_high: dict[str, int] = {}  # int32 placeholder -> bound of its values
        self.users: set[str] = set()  # nodes whose results some node reads
        self.keep: set[str] = set()  # nodes whose unread results the final step saves

    # -- names --------------------------------------------------------------
    def node_name(self, kind: OpKind) -> str:
        return f"{_OP_NAMES[kind]}{len(self.nodes)}"

    def storage_name(self, kind: StorageKind) -> str:
        return f"{_STORAGE_PREFIX[kind]}{len(self.storage)}"

    # -- storage --------------------------------------------------------------
    def seed(self) -> int:
        return self.draws.integer(0, MAX_SEED)

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
        if Feature.CONSTANTS in self.features and self.draws.boolean():
            kind = StorageKind.CONSTANT
        return self.new_storage(t, kind, id_high=id_high)

    def owned(self, owner: str, state_name: str, t: TensorType) -> str:
        name = f"{owner}.{state_name}"
        init = Init(seed=self.seed()) if self.draws.boolean() else None
        self.storage.append(Storage(name=name, kind=StorageKind.OWNED, dtype=t.dtype, shape=t.shape, init=init, owner=owner))
        return name

    # -- operands -------------------------------------------------------------
    def pick(self, want: Callable[[Value], bool], fresh: Callable[[], Value] | None) -> Value:
        """The result of ``fresh()`` (one time in three), or an existing value
        satisfying ``want``: node results first, most recent first (chains of
        activations are what buffer sharing works on; see also
        ``activation``), then storage. Shrinking goes to fresh storage, which
        cuts the node loose from earlier ones so that they can be deleted."""
        results: list[Value] = []
        stored: list[Value] = []
        for v in reversed(self.values):
            if want(v):
                (results if v.storage is None else stored).append(v)
        cands = results + stored
        if fresh is not None and (not cands or self.draws.choice(_FRESH)):
            return fresh()
        if not cands:
            raise NoOperand()
        return cands[self.draws.index(len(cands))]

    def activation(self, want: Callable[[Value], bool], make: Callable[[], Value], otherwise: Callable[[], Value]) -> Value:
        """An operand that is, most of the time, a node result (an activation:
        the only values buffer sharing may overwrite) satisfying ``want``,
        most recent first; ``make()`` when there is none. Otherwise (and
        when shrinking: index 0) ``otherwise()``, fresh storage included."""
        if not self.draws.choice(_ACTIVATION):
            return otherwise()
        acts = [v for v in reversed(self.values) if v.storage is None and want(v)]
        if not acts:
            return make()
        return acts[self.draws.index(len(acts))]

    def shape(self, *, min_rank: int = 1, max_rank: int = MAX_RANK, first: int = 1) -> tuple[int, ...]:
        """A shape; ``first``: the least size of the first axis."""
        dims = self.draws.list_of(lambda: self.draws.integer(1, self.max_dim), min_rank, max_rank)
        if dims and dims[0] < first:
            dims[0] = self.draws.integer(first, self.max_dim)
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
            raise NoOperand()
        return self.pick(ok, fresh)

    # -- nodes ----------------------------------------------------------------
    def add_node(self, kind: OpKind, inputs: Iterable[Value], *, state: tuple[str, ...] = (), attrs: dict[str, object] | None = None, name: str | None = None) -> Node:
        """Append a node; its result types come from the spec's shape rule."""
        spec = OPS[kind]
        inputs = tuple(inputs)
        node = Node(
            name=name or self.node_name(kind),
            op=kind,
            inputs=tuple([v.ref for v in inputs]),
            state=state,
            attrs=freeze_attrs(attrs) if attrs else (),
        )
        state_types = [self.storage_type(s) for s in state]
        results = spec.shape_rule([v.type for v in inputs], state_types, _attr_values(spec, node))
        self.nodes.append(node)
        for v in inputs:
            self.users.add(v.ref.name)
        # drawn with the node, not after the whole graph (see _SAVE_SINK)
        if results and self.draws.choice(_SAVE_SINK):
            self.keep.add(node.name)
        multi = len(results) > 1
        for k, t in enumerate(results):
            self.values.append(Value(Ref(node.name, k if multi else None), t, None, _int_bound(inputs) if t.dtype is I32 else None))
        return node

    def value_of(self, node: str) -> Value:
        """The (single) result of ``node``."""
        ref = Ref(node)
        return next(v for v in self.values if v.ref == ref)

    def storage_type(self, name: str) -> TensorType:
        s = next(s for s in self.storage if s.name == name)
        return TensorType(s.shape, s.dtype)

    def save(self, value: Value, target: str) -> Node:
        self.saved.add(target)
        return self.add_node(OpKind.SAVE, [value], attrs={"target": target})

    def graph(self, name: str) -> Graph:
        return Graph(name=name, storage=tuple(self.storage), nodes=tuple(self.nodes))


class NoOperand(Exception):
    """A recipe found no operand it can use; the move is skipped."""


def _attr_values(spec: OpSpec, node: Node) -> dict[str, object]:
    if not spec.attrs:
        return {}
    given = dict(node.attrs)
    return {a.name: given.get(a.name, a.default) for a in spec.attrs}


def _int_bound(inputs: tuple[Value, ...]) -> int | None:
    """Ops on int32 values only move them around (identity, transpose, concat,
    roll, reshape) or pick one of them (max), so the result's bound is the
    largest operand bound."""
    bounds = [v.id_high for v in inputs if v.id_high is not None]
    return max(bounds) if bounds else None


def fits(spec: OpSpec, types: list[TensorType], attrs: dict[str, object] | None = None) -> bool:
    full = {a.name: a.default for a in spec.attrs} | (attrs or {})
    try:
        spec.shape_rule(types, [], full)
    except ShapeError:
        return False
    return True
