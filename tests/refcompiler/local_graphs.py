"""A small Hypothesis strategy for valid graphs, local to the pipeline tests.

Graphs have a few placeholders (read, and saved into: the classic hazard), a
constant, owners of state (``accumulate``, ``quantization_profile``,
``embedding_update``), views (``reshape``), several results (``add_sub``,
``sgd_momentum``), stencils and transposes, broadcasting and reductions.
Structure is drawn step by step from short lists, so shrinking reaches a
handful of nodes. Every graph it gives passes ``verify``.
"""

from __future__ import annotations

from hypothesis import strategies as st

from specs import Dtype, OpKind

from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind, freeze_attrs

F32 = Dtype.FLOAT32
SHAPES = ((4,), (2, 3), (3, 2), (6,), (2, 2))
STEPS = (
    "unary", "binary", "broadcast", "transpose", "roll", "reshape", "reduce", "concat", "matmul",
    "add_sub", "sgd", "accumulate", "profile", "embedding",
)
UNARY = (OpKind.RELU, OpKind.NEG, OpKind.TANH, OpKind.EXP, OpKind.IDENTITY)
BINARY = (OpKind.ADD, OpKind.SUB, OpKind.MUL, OpKind.MAX)


def _size(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


@st.composite
def graphs(draw: st.DrawFn, *, max_steps: int = 7) -> Graph:
    seeds = st.integers(0, 2**16)
    storage: list[Storage] = []
    nodes: list[Node] = []
    values: list[tuple[str, tuple[int, ...]]] = []  # float32 values a node may read: (ref, shape)

    for i, shape in enumerate(draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3))):
        storage.append(Storage(f"p{i}", StorageKind.PLACEHOLDER, F32, shape, Init(seed=draw(seeds))))
        values.append((f"p{i}", shape))
    if draw(st.booleans()):
        shape = draw(st.sampled_from(SHAPES))
        storage.append(Storage("c0", StorageKind.CONSTANT, F32, shape, Init(seed=draw(seeds))))
        values.append(("c0", shape))

    def pick(shape_ok=lambda s: True) -> tuple[str, tuple[int, ...]] | None:
        fitting = [v for v in values if shape_ok(v[1])]
        return draw(st.sampled_from(fitting)) if fitting else None

    def add(name: str, op: OpKind, inputs: list[str], *, state: tuple[str, ...] = (), attrs: dict | None = None) -> None:
        nodes.append(Node(name, op, tuple(Ref.parse(x) for x in inputs), state, freeze_attrs(attrs or {})))

    for k, step in enumerate(draw(st.lists(st.sampled_from(STEPS), min_size=1, max_size=max_steps))):
        name = f"n{k}"
        if step == "unary":
            (x, shape) = pick()
            add(name, draw(st.sampled_from(UNARY)), [x])
            values.append((name, shape))
        elif step == "binary":
            a, shape = pick()
            b, _ = pick(lambda s, shape=shape: s == shape)
            add(name, draw(st.sampled_from(BINARY)), [a, b])
            values.append((name, shape))
        elif step == "broadcast":
            chosen = pick(lambda s: len(s) == 2)
            vec = chosen and pick(lambda s, c=chosen: s == (c[1][1],))
            if vec:
                first, second = (chosen[0], vec[0]) if draw(st.booleans()) else (vec[0], chosen[0])
                add(name, draw(st.sampled_from(BINARY)), [first, second])
                values.append((name, chosen[1]))
        elif step == "transpose":
            chosen = pick(lambda s: len(s) == 2)
            if chosen:
                add(name, OpKind.TRANSPOSE, [chosen[0]])
                values.append((name, chosen[1][::-1]))
        elif step == "roll":
            x, shape = pick()
            add(name, OpKind.ROLL, [x])
            values.append((name, shape))
        elif step == "reshape":
            x, shape = pick()
            target = draw(st.sampled_from([s for s in SHAPES if _size(s) == _size(shape)] + [(_size(shape),)]))
            add(name, OpKind.RESHAPE, [x], attrs={"shape": list(target)})
            values.append((name, target))
        elif step == "reduce":
            chosen = pick(lambda s: len(s) == 2)
            if chosen:
                add(name, OpKind.REDUCE_SUM, [chosen[0]], attrs={"axis": 0})
                values.append((name, chosen[1][1:]))
        elif step == "concat":
            a, shape = pick()
            b, _ = pick(lambda s, shape=shape: s == shape)
            add(name, OpKind.CONCAT, [a, b], attrs={"axis": 0})
            values.append((name, (2 * shape[0],) + shape[1:]))
        elif step == "matmul":
            a = pick(lambda s: len(s) == 2)
            b = a and pick(lambda s, a=a: len(s) == 2 and s[0] == a[1][1])
            if b:
                add(name, OpKind.MATMUL, [a[0], b[0]])
                values.append((name, (a[1][0], b[1][1])))
        elif step == "add_sub":
            a, shape = pick()
            b, _ = pick(lambda s, shape=shape: s == shape)
            add(name, OpKind.ADD_SUB, [a, b])
            values.extend([(f"{name}:0", shape), (f"{name}:1", shape)])
        elif step == "sgd":
            w, shape = pick()
            g, _ = pick(lambda s, shape=shape: s == shape)
            v, _ = pick(lambda s, shape=shape: s == shape)
            add(name, OpKind.SGD_MOMENTUM, [w, g, v], attrs={"lr": 0.125, "mu": 0.5})
            values.extend([(f"{name}:0", shape), (f"{name}:1", shape)])
        elif step == "accumulate":
            x, shape = pick()
            storage.append(Storage(f"{name}_acc", StorageKind.OWNED, F32, shape, Init(seed=draw(seeds)), owner=name))
            add(name, OpKind.ACCUMULATE, [x], state=(f"{name}_acc",))
            values.append((name, shape))
        elif step == "profile":
            x, _ = pick()
            bins = draw(st.integers(2, 5))
            storage.append(Storage(f"{name}_mm", StorageKind.OWNED, F32, (2,), Init(value=(0.0, 0.0)), owner=name))
            storage.append(Storage(f"{name}_hist", StorageKind.OWNED, F32, (bins,), owner=name))
            add(name, OpKind.QUANTIZATION_PROFILE, [x], state=(f"{name}_mm", f"{name}_hist"), attrs={"lo": -2.0, "hi": 2.0})
        elif step == "embedding":
            grad = pick(lambda s: len(s) == 2)
            if grad:
                (n, c), rows = grad[1], draw(st.integers(1, 4))
                ids = f"{name}_ids"
                storage.append(Storage(ids, StorageKind.PLACEHOLDER, Dtype.INT32, (n,), Init(seed=draw(seeds), low=0, high=rows)))
                storage.append(Storage(f"{name}_table", StorageKind.OWNED, F32, (rows, c), Init(seed=draw(seeds)), owner=name))
                add(name, OpKind.EMBEDDING_UPDATE, [ids, grad[0]], state=(f"{name}_table",))
                values.append((name, (n, c)))

    for s in [s for s in storage if s.kind is StorageKind.PLACEHOLDER and s.dtype is F32]:
        if draw(st.booleans()):
            source = pick(lambda shape, s=s: shape == s.shape)
            if source is not None:
                add(f"save_{s.name}", OpKind.SAVE, [source[0]], attrs={"target": s.name})
    if draw(st.booleans()):
        nodes.reverse()  # nodes may be listed in any order; creation order only breaks ties
    return Graph(name="hypothesis", storage=tuple(storage), nodes=tuple(nodes))
