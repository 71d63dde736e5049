"""Large valid graphs for the proof engines' scale tests and ``refc bench --proofs``.

``large_graph(n, seed=...)`` builds a graph of exactly ``n`` nodes, the same
for the same ``n`` and ``seed``, that passes ``verify``. It has what makes SCH-2
non-trivial at scale:

- placeholders read by many nodes on many paths (directly and through
  ``reshape`` views) and saved, each by one ``save`` whose value is computed
  from recent nodes (the classic read-then-save hazard, everywhere);
- owned state: ``accumulate`` and ``quantization_profile`` owners;
- data edges to recent values (a window), so paths are long and many.

Every value is ``float32[4]``, so shapes never get in the way. Saves read node
results only, never a placeholder, so memory edges close no cycle.
"""

from __future__ import annotations

import random

from specs import Dtype, OpKind

from refcompiler import limits
from refcompiler.errors import UsageError
from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind, freeze_attrs

__all__ = ["large_graph"]

SHAPE = (4,)
WINDOW = 24  # how far back an input may reach, in values made so far
UNARY = (OpKind.RELU, OpKind.NEG, OpKind.TANH)
BINARY = (OpKind.ADD, OpKind.SUB, OpKind.MUL, OpKind.MAX)


def large_graph(n: int, *, seed: int = 0) -> Graph:
    """A valid graph of exactly ``n`` nodes (``n >= 1``), deterministic in ``n`` and ``seed``.

    About one node in twelve is a save, one in twenty-five an owner of state,
    one in twenty a view; the rest are elementwise ops. There are about
    ``n / 10`` placeholders, each read about five times (also through views);
    most of them are saved.
    """
    if n < 1:
        raise UsageError(f"a graph needs at least 1 node, got {n}")
    limits.check("nodes", n, f"a generated graph of {n} nodes")  # before it is built: a graph file could hold no more
    rng = random.Random(f"large_graph/{n}/{seed}")
    n_place = max(1, n // 10)
    n_const = max(1, n // 40)
    kinds = _kinds(n, n_place, rng)
    build = _Builder(rng, [f"P{i}" for i in range(n_place)], [f"C{i}" for i in range(n_const)])
    for i, kind in enumerate(kinds):
        build.node(f"n{i}", kind)
    return Graph(name=f"large_{n}_{seed}", storage=tuple(build.storage), nodes=tuple(build.nodes))


def _kinds(n: int, n_place: int, rng: random.Random) -> list[str]:
    """What each of the ``n`` nodes is, shuffled: save, owner, view or pure."""
    n_save = min(n_place, max(1 if n >= 3 else 0, n // 12))
    kinds = ["save"] * n_save + ["owner"] * (n // 25) + ["view"] * (n // 20)
    kinds += ["pure"] * (n - len(kinds))
    rng.shuffle(kinds)
    # the first node computes a value, so every save has something to save
    if "pure" in kinds:
        kinds.remove("pure")
        kinds.insert(0, "pure")
    return kinds


class _Builder:
    """The storage and nodes made so far; ``values`` are the nodes with one
    float32[4] result, which later nodes read."""

    def __init__(self, rng: random.Random, placeholders: list[str], constants: list[str]):
        self.rng = rng
        self.placeholders = placeholders
        self.constants = constants
        self.storage = [_storage(p, StorageKind.PLACEHOLDER, rng) for p in placeholders]
        self.storage += [_storage(c, StorageKind.CONSTANT, rng) for c in constants]
        self.values: list[str] = []
        self.nodes: list[Node] = []
        self.saved = 0
        self.turn = 0

    def placeholder(self) -> str:
        """Half the time the next placeholder in turn, so that every one is read."""
        if self.rng.random() < 0.5:
            return self.rng.choice(self.placeholders)
        self.turn += 1
        return self.placeholders[self.turn % len(self.placeholders)]

    def operand(self) -> Ref:
        """A recent value, or (two times in five, or when there is none) a storage read."""
        if self.values and self.rng.random() < 0.6:
            return Ref(self.rng.choice(self.values[-WINDOW:]))
        return Ref(self.placeholder() if self.rng.random() < 0.85 else self.rng.choice(self.constants))

    def node(self, name: str, kind: str) -> None:
        rng = self.rng
        if kind == "save" and self.values:
            value = Ref(rng.choice(self.values[-WINDOW:]))
            self.add(Node(name, OpKind.SAVE, (value,), attrs=freeze_attrs({"target": self.placeholders[self.saved]})), value=False)
            self.saved += 1
        elif kind == "view":
            self.add(Node(name, OpKind.RESHAPE, (Ref(self.placeholder()),), attrs=freeze_attrs({"shape": list(SHAPE)})))
        elif kind == "owner" and rng.random() < 0.5:
            acc = f"{name}.acc"
            self.storage.append(_storage(acc, StorageKind.OWNED, rng, owner=name))
            self.add(Node(name, OpKind.ACCUMULATE, (self.operand(),), state=(acc,)))
        elif kind == "owner":
            minmax, hist = f"{name}.minmax", f"{name}.hist"
            self.storage.append(_storage(minmax, StorageKind.OWNED, rng, owner=name, shape=(2,)))
            self.storage.append(_storage(hist, StorageKind.OWNED, rng, owner=name, shape=(8,)))
            self.add(Node(name, OpKind.QUANTIZATION_PROFILE, (self.operand(),), state=(minmax, hist)), value=False)
        elif rng.random() < 0.35:
            self.add(Node(name, rng.choice(UNARY), (self.operand(),)))
        else:
            self.add(Node(name, rng.choice(BINARY), (self.operand(), self.operand())))

    def add(self, node: Node, *, value: bool = True) -> None:
        self.nodes.append(node)
        if value:
            self.values.append(node.name)


def _storage(
    name: str, kind: StorageKind, rng: random.Random, *, owner: str | None = None, shape: tuple[int, ...] = SHAPE
) -> Storage:
    return Storage(name, kind, Dtype.FLOAT32, shape, Init(seed=rng.randrange(2**16)), owner=owner)
