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
    rng = random.Random(f"large_graph/{n}/{seed}")
    n_place = max(1, n // 10)
    n_const = max(1, n // 40)
    n_save = min(n_place, max(1 if n >= 3 else 0, n // 12))
    n_owner = n // 25
    n_view = n // 20
    kinds = ["save"] * n_save + ["owner"] * n_owner + ["view"] * n_view
    kinds += ["pure"] * (n - len(kinds))
    rng.shuffle(kinds)
    # the first node computes a value, so every save has something to save
    if "pure" in kinds:
        kinds.remove("pure")
        kinds.insert(0, "pure")

    placeholders = [f"P{i}" for i in range(n_place)]
    constants = [f"C{i}" for i in range(n_const)]
    storage = [_storage(p, StorageKind.PLACEHOLDER, rng) for p in placeholders]
    storage += [_storage(c, StorageKind.CONSTANT, rng) for c in constants]
    values: list[str] = []  # nodes with one float32[4] result
    nodes: list[Node] = []
    saved = 0
    turn = 0

    def placeholder() -> str:
        """Half the time the next placeholder in turn, so that every one is read."""
        nonlocal turn
        if rng.random() < 0.5:
            return rng.choice(placeholders)
        turn += 1
        return placeholders[turn % n_place]

    def operand() -> Ref:
        """A recent value, or (two times in five, or when there is none) a storage read."""
        if values and rng.random() < 0.6:
            return Ref(rng.choice(values[-WINDOW:]))
        return Ref(placeholder() if rng.random() < 0.85 else rng.choice(constants))

    for i, kind in enumerate(kinds):
        name = f"n{i}"
        if kind == "save" and values:
            value = Ref(rng.choice(values[-WINDOW:]))
            nodes.append(Node(name, OpKind.SAVE, (value,), attrs=freeze_attrs({"target": placeholders[saved]})))
            saved += 1
        elif kind == "view":
            source = Ref(placeholder())
            nodes.append(Node(name, OpKind.RESHAPE, (source,), attrs=freeze_attrs({"shape": list(SHAPE)})))
            values.append(name)
        elif kind == "owner" and rng.random() < 0.5:
            acc = f"{name}.acc"
            storage.append(_storage(acc, StorageKind.OWNED, rng, owner=name))
            nodes.append(Node(name, OpKind.ACCUMULATE, (operand(),), state=(acc,)))
            values.append(name)
        elif kind == "owner":
            minmax, hist = f"{name}.minmax", f"{name}.hist"
            storage.append(_storage(minmax, StorageKind.OWNED, rng, owner=name, shape=(2,)))
            storage.append(_storage(hist, StorageKind.OWNED, rng, owner=name, shape=(8,)))
            nodes.append(Node(name, OpKind.QUANTIZATION_PROFILE, (operand(),), state=(minmax, hist)))
        elif rng.random() < 0.35:
            nodes.append(Node(name, rng.choice(UNARY), (operand(),)))
            values.append(name)
        else:
            nodes.append(Node(name, rng.choice(BINARY), (operand(), operand())))
            values.append(name)
    return Graph(name=f"large_{n}_{seed}", storage=tuple(storage), nodes=tuple(nodes))


def _storage(
    name: str, kind: StorageKind, rng: random.Random, *, owner: str | None = None, shape: tuple[int, ...] = SHAPE
) -> Storage:
    return Storage(name, kind, Dtype.FLOAT32, shape, Init(seed=rng.randrange(2**16)), owner=owner)
