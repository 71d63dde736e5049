"""The builder: the mutable scratch state of one graph draw (not an IR
value), the values a node may read, and how operands are picked.

``Builder.add_node`` gives every node its result types through the spec's
shape rule, never through the recipe that picked its operands.
"""

from __future__ import annotations

from typing import Callable, Iterable, NamedTuple

import numpy as np

from specs import OPS, Dtype, OpKind, OpSpec, ShapeError, TensorType
from specs.opspec import FastEnum

from refcompiler.errors import InternalError
from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind, freeze_attrs

from fuzz.strategies.draws import Draws

__all__ = [
    "F32", "I32", "MAX_DIM", "MAX_RANK", "MAX_SEED", "WIDE_INTS", "TIES", "TIES_MAX_SIZE",
    "Feature", "Value", "Builder", "NoOperand", "fits", "tie_values",
]

F32 = Dtype.FLOAT32
I32 = Dtype.INT32
MAX_DIM = 4
MAX_RANK = 3
MAX_SEED = 2**16

# The [low, high) of fresh int32 values that are not ids, i.e. reach no index
# input (``OpSpec.index_inputs``): signed and small (ties, both signs), the whole
# of int32, and three values at either limit. int32 values are only moved or
# compared (``max``, ``uniform_dtypes``): no op does arithmetic on them, so
# every int32 is defined, and a compiler that compares them as unsigned or
# computes max(a, b) as a + (b - a) is wrong on these and right on ids.
INT32_LOW, INT32_HIGH = -(2**31), 2**31
WIDE_INTS: tuple[tuple[int, int], ...] = ((-3, 3), (INT32_LOW, INT32_HIGH), (INT32_HIGH - 3, INT32_HIGH), (INT32_LOW, INT32_LOW + 3))

# Whether fresh int32 values that are not ids are wide: one in two, shrinking to ids.
_WIDE = (False, True)

# The float32 values of a graph with ties (``Builder.ties``): exact ties between
# operands and both signed zeros, which standard-normal seeds never give and on
# which max(a, b) and max(b, a) differ in bits (numpy's maximum of two equal
# values is its second operand, -0.0 or +0.0, in the reference and in every
# compiled program alike: the kernels are the same).
TIES = (-1.0, -0.0, 0.0, 1.0, 2.0)
_TIES = np.array(TIES, dtype=np.float32)

# Tie values are explicit (``Init.value``, the graph file's ``value``): a
# storage larger than this (``--max-dim`` above 4) keeps its seeded values.
TIES_MAX_SIZE = 1024


class Feature(FastEnum):
    """Optional structure a swarm example may enable (besides its ops);
    hashed as objects are (the builder asks ``feature in features`` often)."""

    BROADCAST = "broadcast"  # binary operands of different, broadcastable shapes
    CONSTANTS = "constants"  # fresh operands may be constants, not only placeholders
    READ_SAVE = "read-save"  # saves into placeholders that nodes also read
    SAVE_CYCLE = "save-cycle"  # two saves that swap placeholders (memory edges close a cycle)
    DIAMOND = "diamond"  # a move x -> (view or elementwise, in-place candidate) -> binary join
    CHAIN = "chain"  # a move x -> op -> op (-> op): single-input ops, each reading the last
    TWINS = "twins"  # a move op(x, y) then op(y, x) (or op(x, y) again): what CSE merges, or must not


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

    ``ints`` holds an int32 value's elements: each is in [low, high). An id
    (``id_high``: in [0, MAX_DIM]) may feed an index input; an embedding table
    with at least ``high`` rows never sees it out of range. Immutable; a named
    tuple rather than a frozen dataclass because one is made per storage and
    node result, a quarter of the cost.
    """

    ref: Ref
    type: TensorType
    storage: StorageKind | None = None
    ints: tuple[int, int] | None = None

    @property
    def id_high(self) -> int | None:
        """``high`` of an id (an int32 value in [0, high), high <= MAX_DIM), else None."""
        r = self.ints
        if r is None or r[0] < 0 or r[1] > MAX_DIM:
            return None
        return r[1]

    @property
    def is_float(self) -> bool:
        return self.type.dtype is F32

    @property
    def rank(self) -> int:
        return len(self.type.shape)


class Builder:
    """The mutable scratch state of one graph draw: storage, nodes and the
    values made so far; ``draws`` makes every choice."""

    def __init__(self, draws: Draws, features: frozenset[Feature], max_nodes: int, max_dim: int = MAX_DIM, *, ties: bool = False):
        self.draws = draws
        self.ties = ties  # fresh float32 storage takes values of TIES (up to TIES_MAX_SIZE elements)
        self.features = features
        self.max_nodes = max_nodes
        self.max_dim = max_dim  # the largest size drawn for an axis (at least 2: some recipes need a first axis of 2)
        self.storage: list[Storage] = []
        self.nodes: list[Node] = []
        self.values: list[Value] = []
        self.saved: set[str] = set()  # placeholders that have their save
        self.ints: dict[str, tuple[int, int]] = {}  # int32 placeholder -> [low, high) of its values
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

    def int_range(self) -> tuple[int, int]:
        """The [low, high) of fresh int32 values that need not be ids (reach
        no index input): one of ``WIDE_INTS`` half of the time, else ids."""
        if self.draws.choice(_WIDE):
            return self.draws.choice(WIDE_INTS)
        return self.id_range()

    def id_range(self) -> tuple[int, int]:
        """The [0, high) of fresh ids, high in [1, MAX_DIM]; shrinks to [0, 1)."""
        return (0, self.draws.integer(1, MAX_DIM))

    def new_storage(self, t: TensorType, kind: StorageKind, *, ints: tuple[int, int] | None = None, readable: bool = True) -> Value:
        """Fresh placeholder or constant of type ``t`` (rank >= 1) with a
        seeded value: int32 in ``ints`` ([0, 1) if not given); float32
        standard-normal, or in a graph with ties, of ``TIES``."""
        if not t.shape:
            raise InternalError(f"generator: storage of type {t} asked for; storage has at least one dimension")
        if t.dtype is I32:
            low, high = ints if ints is not None else (0, 1)
            init = Init(seed=self.seed(), low=low, high=high)
        elif self.ties and t.size <= TIES_MAX_SIZE:
            init = Init(value=tie_values(self.seed(), t.size))
        else:
            init = Init(seed=self.seed())
        s = Storage(name=self.storage_name(kind), kind=kind, dtype=t.dtype, shape=t.shape, init=init)
        self.storage.append(s)
        value = Value(Ref(s.name), t, kind, (init.low, init.high) if t.dtype is I32 else None)
        if kind is StorageKind.PLACEHOLDER and value.ints is not None:
            self.ints[s.name] = value.ints
        if readable:
            self.values.append(value)
        return value

    def fresh(self, t: TensorType, *, ints: tuple[int, int] | None = None) -> Value:
        """A fresh operand: a placeholder, or a constant when the swarm allows."""
        kind = StorageKind.PLACEHOLDER
        if Feature.CONSTANTS in self.features and self.draws.boolean():
            kind = StorageKind.CONSTANT
        return self.new_storage(t, kind, ints=ints)

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

    def of_type(self, t: TensorType) -> Value:
        """A value of exactly type ``t`` (fresh storage needs rank >= 1) for
        an input that is no index: an int32 one of any range, a fresh one in
        ``int_range()``."""
        ok: Callable[[Value], bool] = lambda v: v.type == t
        fresh = (lambda: self.fresh(t, ints=self.int_range() if t.dtype is I32 else None)) if t.shape else None
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
        if spec.index_inputs:
            _check_ids(node, inputs, spec, state_types[0].shape[0])
        self.nodes.append(node)
        for v in inputs:
            self.users.add(v.ref.name)
        # drawn with the node, not after the whole graph (see _SAVE_SINK)
        if results and self.draws.choice(_SAVE_SINK):
            self.keep.add(node.name)
        multi = len(results) > 1
        for k, t in enumerate(results):
            self.values.append(Value(Ref(node.name, k if multi else None), t, None, _int_range(inputs) if t.dtype is I32 else None))
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


def _check_ids(node: Node, inputs: tuple[Value, ...], spec: OpSpec, rows: int) -> None:
    """The recipe's promise for an index input: ids within the state's first
    axis (``rows``), else a bug in the generator (a draw that breaks it would
    be an ExecutionError found in a correct compiler)."""
    for i in spec.index_positions():
        high = inputs[i].id_high
        if high is None or high > rows:
            reach = "values that are no ids" if high is None else f"ids up to {high - 1}"
            raise InternalError(f"generator: {node.name} ({spec.name}): its index input '{inputs[i].ref}' holds {reach}, "
                                f"beyond the {rows} rows of its state's first axis (a recipe gives an index input ids in [0, {rows}))")


def _attr_values(spec: OpSpec, node: Node) -> dict[str, object]:
    if not spec.attrs:
        return {}
    given = dict(node.attrs)
    return {a.name: given.get(a.name, a.default) for a in spec.attrs}


def _int_range(inputs: tuple[Value, ...]) -> tuple[int, int] | None:
    """Ops on int32 values only move them around (identity, transpose, concat,
    roll, reshape) or pick one of them (max), so the result's range is the
    smallest that holds every operand's."""
    ranges = [v.ints for v in inputs if v.ints is not None]
    if not ranges:
        return None
    return min(r[0] for r in ranges), max(r[1] for r in ranges)


def tie_values(seed: int, size: int) -> tuple[float, ...]:
    """``size`` values of ``TIES``, a function of ``seed`` (one choice
    drawn, however many elements)."""
    picks = np.random.default_rng(seed).integers(0, len(TIES), size=size)
    return tuple(_TIES[picks].tolist())


def fits(spec: OpSpec, types: list[TensorType], attrs: dict[str, object] | None = None) -> bool:
    full = {a.name: a.default for a in spec.attrs} | (attrs or {})
    try:
        spec.shape_rule(types, [], full)
    except ShapeError:
        return False
    return True
