"""Graphs for the proof tests: literal ones, and a Hypothesis strategy of
graphs built from raw effects that may break OWN-2, OWN-3 or OWN-4.

Every value is ``float32[4]`` and every op is used with its spec's arity, so
a graph drawn with ``allow_invalid=False`` passes ``verify``; with
``allow_invalid=True`` it may read another node's owned state, save into a
constant or an owned variable, save twice into one placeholder, or use a
placeholder or a constant as state. Data edges only point to earlier nodes,
so the data graph is acyclic; memory edges may close a cycle through saves,
which ``break_save_cycles`` removes.
"""

from __future__ import annotations

from hypothesis import strategies as st

from specs import Dtype, OpKind

from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind, freeze_attrs

F32 = Dtype.FLOAT32
SHAPE = (4,)
MOVES = ("add", "relu", "view", "save", "owner")


def storage(name: str, kind: StorageKind, owner: str | None = None) -> Storage:
    return Storage(name, kind, F32, SHAPE, Init(seed=len(name)), owner=owner)


def node(name: str, op: OpKind, *inputs: str, state: tuple[str, ...] = (), **attrs: object) -> Node:
    return Node(name, op, tuple(Ref.parse(i) for i in inputs), state, freeze_attrs(attrs))


def save(name: str, value: str, target: str) -> Node:
    return node(name, OpKind.SAVE, value, target=target)


def graph(name: str, storages: list[Storage], nodes: list[Node]) -> Graph:
    return Graph(name, tuple(storages), tuple(nodes))


@st.composite
def raw_graphs(draw: st.DrawFn, *, allow_invalid: bool, max_nodes: int = 6) -> Graph:
    """A small graph (see the module docstring). Each node is one "move": a kind
    and three small integers that pick its operands among what exists so far."""
    n_place = draw(st.integers(1, 3))
    n_const = draw(st.integers(0, 1))
    stores = [storage(f"P{i}", StorageKind.PLACEHOLDER) for i in range(n_place)]
    stores += [storage(f"C{i}", StorageKind.CONSTANT) for i in range(n_const)]
    moves = draw(
        st.lists(st.tuples(st.sampled_from(MOVES), st.integers(0, 9), st.integers(0, 9), st.integers(0, 9)), min_size=1, max_size=max_nodes)
    )
    nodes: list[Node] = []
    values: list[str] = []  # nodes with one result
    saved: set[str] = set()

    def readable(k: int) -> str:
        """A value or storage to read: any storage when invalid graphs are allowed
        (owned state too: OWN-2), else placeholders, constants and values."""
        pool = [s.name for s in stores if allow_invalid or s.kind is not StorageKind.OWNED] + values
        return pool[k % len(pool)]

    for i, (kind, x, y, z) in enumerate(moves):
        name = f"n{i}"
        if kind == "add":
            nodes.append(node(name, OpKind.ADD, readable(x), readable(y)))
            values.append(name)
        elif kind == "relu":
            nodes.append(node(name, OpKind.RELU, readable(x)))
            values.append(name)
        elif kind == "view":
            nodes.append(node(name, OpKind.RESHAPE, readable(x), shape=list(SHAPE)))
            values.append(name)
        elif kind == "save":
            targets = [s.name for s in stores if allow_invalid or (s.kind is StorageKind.PLACEHOLDER and s.name not in saved)]
            if not targets:
                continue
            target = targets[y % len(targets)]
            saved.add(target)
            nodes.append(save(name, readable(x), target))
        else:  # an owner of state: its own fresh variable, or (invalid) someone else's storage
            own = f"{name}.acc"
            others = [s.name for s in stores] if allow_invalid else []
            state = own if z % 3 or not others else others[y % len(others)]
            if state == own:
                stores.append(storage(own, StorageKind.OWNED, owner=name))
            nodes.append(node(name, OpKind.ACCUMULATE, readable(x), state=(state,)))
            values.append(name)
    if not nodes:  # every move was a save with nothing left to save into
        nodes.append(node("n0", OpKind.RELU, stores[0].name))
    return graph("raw", stores, nodes)
