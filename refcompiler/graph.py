"""The graph IR: storage in three categories and nodes that refer to it (DESIGN §1, §10).

Values are immutable. A ``Graph`` is built by ``refcompiler.graph_json.load`` or
directly; it is checked by ``refcompiler.verifier.verify``. Names are unique
across storage and nodes, since an input may name either.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field, replace
from typing import Iterator

import numpy as np

from specs import OPS, Dtype, FastEnum, OpKind, OpSpec
from specs.cached import cached_property

from refcompiler import variants
from refcompiler.spec import spec_of

__all__ = ["StorageKind", "Init", "Storage", "Ref", "Node", "Graph", "initial_value"]


class StorageKind(FastEnum):
    CONSTANT = "constant"
    PLACEHOLDER = "placeholder"
    OWNED = "owned"


@dataclass(frozen=True)
class Init:
    """An initial value: explicit ``value`` (flat, row-major) or drawn from ``seed``.

    Seeded floats are standard-normal; seeded integers are uniform in [low, high).
    """

    seed: int | None = None
    value: tuple[float | int, ...] | None = None
    low: int = 0
    high: int = 1


@dataclass(frozen=True)
class Storage:
    name: str
    kind: StorageKind
    dtype: Dtype
    shape: tuple[int, ...]
    init: Init | None = None
    owner: str | None = None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @cached_property
    def _initial(self) -> np.ndarray:
        """The initial value, made once per storage object (storage is
        immutable, the value a function of its fields alone) and read-only:
        ``initial_value`` hands out copies."""
        value = _make_initial(self)
        value.flags.writeable = False
        return value

    def __getstate__(self) -> dict[str, object]:
        # a pickled or copied storage (a case sent to or from a worker) leaves its value behind
        return {k: v for k, v in self.__dict__.items() if k != "_initial"}


@dataclass(frozen=True)
class Ref:
    """An input: storage or a node's result ``name``, or result ``index`` of a node ``name:index``."""

    name: str
    index: int | None = None

    @staticmethod
    def parse(text: str) -> "Ref":
        name, sep, index = text.rpartition(":")
        # ASCII decimal without leading zeros: str.isdigit accepts "²", which int() refuses
        if sep and name and index.isascii() and index.isdigit() and (index == "0" or index[0] != "0"):
            return Ref(name, int(index))
        return Ref(text)

    @property
    def result(self) -> int:
        return self.index or 0

    def __str__(self) -> str:
        return self.name if self.index is None else f"{self.name}:{self.index}"


@dataclass(frozen=True)
class Node:
    name: str
    op: OpKind
    inputs: tuple[Ref, ...] = ()
    state: tuple[str, ...] = ()
    attrs: tuple[tuple[str, object], ...] = ()

    @property
    def spec(self) -> OpSpec:
        # ``spec_of``, without its swap point's call while no mutant is installed anywhere
        return spec_of(self.op) if variants.installing else OPS[self.op]

    def attr(self, name: str) -> object:
        """The attribute's value as given, else the spec's default."""
        for key, value in self.attrs:
            if key == name:
                return value
        return self.spec.attr(name).default

    def attr_dict(self, spec: OpSpec | None = None) -> dict[str, object]:
        """Every attribute of the spec (``spec``, when the caller has resolved
        it for a walk, else ``self.spec``), each as ``attr`` gives it: the
        first value given, else the spec's default."""
        spec = self.spec if spec is None else spec
        given: dict[str, object] = {}
        for key, value in self.attrs:
            given.setdefault(key, value)
        return {a.name: given[a.name] if a.name in given else spec.attr(a.name).default for a in spec.attrs}

    @property
    def target(self) -> str:
        """A save's placeholder."""
        return str(self.attr("target"))


def freeze_attrs(attrs: dict[str, object]) -> tuple[tuple[str, object], ...]:
    def freeze(v: object) -> object:
        return tuple(freeze(x) for x in v) if isinstance(v, (list, tuple)) else v

    return tuple(sorted((k, freeze(v)) for k, v in attrs.items()))


@dataclass(frozen=True)
class Graph:
    name: str
    storage: tuple[Storage, ...] = ()
    nodes: tuple[Node, ...] = ()
    meta: tuple[tuple[str, object], ...] = field(default=(), compare=False)

    @cached_property
    def storage_by_name(self) -> dict[str, Storage]:
        return {s.name: s for s in self.storage}

    @cached_property
    def node_by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes}

    @cached_property
    def creation_order(self) -> dict[str, int]:
        return {n.name: i for i, n in enumerate(self.nodes)}

    @cached_property
    def data_order(self) -> tuple[str, ...] | None:
        """The node names topologically over data edges (producer before
        reader), ties broken by creation order; ``None`` when data edges close
        a cycle or two nodes share a name (an invalid graph). Made once per
        graph: the reference, type inference and every graph-level walk use it
        (``verifier.evaluation_order``)."""
        index = {n.name: i for i, n in enumerate(self.nodes)}
        if len(index) != len(self.nodes):
            return None
        readers: list[list[int]] = [[] for _ in self.nodes]
        waiting = [0] * len(self.nodes)
        for i, n in enumerate(self.nodes):
            for p in {index[r.name] for r in n.inputs if r.name in index}:
                readers[p].append(i)
                waiting[i] += 1
        ready = [i for i, w in enumerate(waiting) if w == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            i = heapq.heappop(ready)
            order.append(self.nodes[i].name)
            for j in readers[i]:
                waiting[j] -= 1
                if waiting[j] == 0:
                    heapq.heappush(ready, j)
        return tuple(order) if len(order) == len(self.nodes) else None

    def is_storage(self, ref: Ref | str) -> bool:
        name = ref.name if isinstance(ref, Ref) else ref
        return name in self.storage_by_name and (not isinstance(ref, Ref) or ref.index is None)

    def storage_of_kind(self, kind: StorageKind) -> Iterator[Storage]:
        return (s for s in self.storage if s.kind is kind)

    def saves(self) -> Iterator[Node]:
        return (n for n in self.nodes if n.op is OpKind.SAVE)

    def with_nodes(self, nodes: tuple[Node, ...]) -> "Graph":
        return replace(self, nodes=tuple(nodes))


def initial_value(storage: Storage) -> np.ndarray:
    """The storage's initial value as a fresh array (zeros when it has no ``init``)."""
    return storage._initial.copy()


def _make_initial(storage: Storage) -> np.ndarray:
    dtype = np.dtype(storage.dtype.value)
    init = storage.init
    if init is None:
        return np.zeros(storage.shape, dtype)
    if init.value is not None:
        return np.array(init.value, dtype=dtype).reshape(storage.shape)
    rng = np.random.default_rng(init.seed)
    if storage.dtype is Dtype.INT32:
        return rng.integers(init.low, init.high, size=storage.shape, dtype=np.int32)
    return rng.standard_normal(storage.shape).astype(np.float32)
