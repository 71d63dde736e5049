"""Operand recipes, one per op of the spec table (``BUILDERS``).

Ops whose spec says they are plain elementwise ops (one or two data inputs,
no state, no attributes) get a generic recipe derived from the spec; every
other op has its own recipe in ``SPECIAL``. A new op of the table gets a
generic recipe or fails at import, naming the op.
"""

from __future__ import annotations

from typing import Callable

from specs import OPS, OpKind, OpSpec, TensorType

from refcompiler.graph import Storage, StorageKind

from fuzz.strategies.builder import F32, I32, MAX_RANK, Builder, Feature, Value, fits

__all__ = ["Recipe", "BUILDERS", "SPECIAL", "UNARY", "BINARY", "recipe_for", "moves_along_first_axis", "save_target"]


def _broadcast_partner(b: Builder, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with ``shape``: a suffix of it with some dims set
    to 1, or (where ``shape`` has a 1) widened."""
    if not shape:
        return b.shape()
    keep = b.draws.integer(1, len(shape))
    out = []
    for d in shape[len(shape) - keep :]:
        how = b.draws.integer(0, 2)
        if how == 1:
            d = 1
        elif how == 2 and d == 1:
            d = b.draws.integer(1, b.max_dim)
        out.append(d)
    return tuple(out)


def _binary_operands(b: Builder, spec: OpSpec) -> tuple[Value, Value]:
    first = b.any_float()
    if Feature.BROADCAST in b.features and b.draws.boolean():
        other = b.pick(
            lambda v: v.is_float and fits(spec, [first.type, v.type]),
            lambda: b.fresh(TensorType(_broadcast_partner(b, first.type.shape), F32)),
        )
    elif first.rank == 0:
        other = b.pick(lambda v: v.type == first.type, lambda: b.fresh(TensorType(b.shape(), F32)))
    else:
        other = b.of_type(first.type)
    if b.draws.boolean():
        first, other = other, first
    return first, other


def _int_binary_operands(b: Builder, spec: OpSpec) -> tuple[Value, Value]:
    """Two int32 operands (the op's ``uniform_dtypes``), fresh ones in
    ``Builder.int_range``: ids, whose max can still index a table
    (``builder._int_range``), or wide values, whose max is no id."""

    def ints(shape: tuple[int, ...]) -> Value:
        return b.fresh(TensorType(shape, I32), ints=b.int_range())

    first = b.pick(lambda v: v.type.dtype is I32, lambda: ints(b.shape()))
    if Feature.BROADCAST in b.features and b.draws.boolean():
        other = b.pick(
            lambda v: v.type.dtype is I32 and fits(spec, [first.type, v.type]),
            lambda: ints(_broadcast_partner(b, first.type.shape)),
        )
    else:
        other = _other_of_type(b, first)
    if b.draws.boolean():
        first, other = other, first
    return first, other


# Whether an int32 max reads a second value where it drew its first twice: three times in four, shrinking to no.
_ANOTHER = (False, True, True, True)


def _other_of_type(b: Builder, first: Value) -> Value:
    """A value of ``first``'s type: as ``of_type`` picks it, but when that is
    ``first`` itself, three times in four (shrinking to keeping it) a fresh
    one in ``first``'s range (an id's max stays an id). ``max(x, x)``, which
    was 7 int32 maxima in 10, is ``x`` whatever the values, so a pass wrong on
    some int32 values (a clamp ``max(x, c)`` dropped as if ids were never
    negative) went unseen in a 60 s campaign."""
    other = b.of_type(first.type)
    if other.ref == first.ref and first.type.shape and b.draws.choice(_ANOTHER):
        return b.fresh(first.type, ints=first.ints)
    return other


def _build_binary(b: Builder, kind: OpKind) -> None:
    spec = OPS[kind]
    # an op that also takes int32 on both inputs (max) does so one time in two; shrinks to float32
    if spec.uniform_dtypes and b.draws.boolean():
        b.add_node(kind, _int_binary_operands(b, spec))
        return
    b.add_node(kind, _binary_operands(b, spec))


def _build_unary_float(b: Builder, kind: OpKind) -> None:
    b.add_node(kind, [b.any_float()])


def _build_unary_any(b: Builder, kind: OpKind) -> None:
    b.add_node(kind, [b.any_value()])


def moves_along_first_axis(v: Value) -> bool:
    """Whether a stencil along the first axis (roll) moves elements of ``v``:
    with a first axis of size 1 it is the identity, and hides in-place bugs."""
    return v.rank >= 1 and v.type.shape[0] >= 2


def _build_roll(b: Builder, kind: OpKind) -> None:
    # mostly an activation whose first axis roll actually moves along: a
    # stencil must not run in place, and only an activation could
    x = b.activation(
        moves_along_first_axis,
        lambda: b.fresh(TensorType(b.shape(first=2), F32)),
        lambda: b.any_value(min_rank=1),
    )
    b.add_node(kind, [x])


def _build_matmul(b: Builder, kind: OpKind) -> None:
    spec = OPS[kind]
    a = b.any_float(min_rank=1)

    def fresh_b() -> Value:
        k = a.type.shape[-1]
        rank = b.draws.integer(1, 3)
        if rank == 1:
            shape: tuple[int, ...] = (k,)
        elif rank == 2:
            shape = (k, b.draws.integer(1, b.max_dim))
        else:
            # a's innermost batch axis when it has one (of rank 4 and more too: the batch axes broadcast)
            batch = a.type.shape[-3] if a.rank >= 3 else b.draws.integer(1, b.max_dim)
            shape = (batch, k, b.draws.integer(1, b.max_dim))
        return b.fresh(TensorType(shape, F32))

    other = b.pick(lambda v: v.is_float and v.rank >= 1 and fits(spec, [a.type, v.type]), fresh_b)
    b.add_node(kind, [a, other])


# Whether a transpose keeps its input's type: one time in three, shrinking to no.
_SAME_TYPE = (False, False, True)


def _build_transpose(b: Builder, kind: OpKind) -> None:
    if b.draws.choice(_SAME_TYPE):
        _build_type_keeping_transpose(b, kind)
        return
    x = b.any_value()
    attrs: dict[str, object] = {}
    if b.draws.boolean():
        attrs["perm"] = list(b.draws.permutation(range(x.rank)))
    b.add_node(kind, [x], attrs=attrs)


def _build_type_keeping_transpose(b: Builder, kind: OpKind) -> None:
    """A transpose whose result has its input's type (every cycle of its
    permutation over axes of one size, at least 2 where the cycle moves
    elements): only then can a pass mistake it for a copy, or let it run in
    place, without a type check telling. Drawn at random, such a transpose
    was about one in 200, so a pass that took ``perm[0] == 0`` for the
    identity (wrong from rank 3: ``(0, 2, 1)``) went unseen in a 60 s campaign."""
    rank = b.draws.integer(2, MAX_RANK)
    perm = b.draws.permutation(range(rank))
    shape = [0] * rank
    for axis in range(rank):
        if shape[axis]:
            continue
        size = b.draws.integer(min(2, b.max_dim), b.max_dim) if perm[axis] != axis else b.draws.integer(1, b.max_dim)
        while not shape[axis]:  # the axes of its cycle
            shape[axis] = size
            axis = perm[axis]
    x = b.fresh(TensorType(tuple(shape), F32))
    b.add_node(kind, [x], attrs={"perm": perm})


def _build_reduce_sum(b: Builder, kind: OpKind) -> None:
    x = b.any_float()
    attrs: dict[str, object] = {}
    how = b.draws.integer(0, 2) if x.rank else 0
    if how == 1:
        attrs["axis"] = b.draws.integer(-x.rank, x.rank - 1)
    elif how == 2:
        attrs["axis"] = sorted(b.draws.subset(x.rank, 1))
    if b.draws.boolean():
        attrs["keepdims"] = b.draws.boolean()
    b.add_node(kind, [x], attrs=attrs)


def _build_concat(b: Builder, kind: OpKind) -> None:
    first = b.any_value(min_rank=1)
    rank = first.rank
    axis = b.draws.integer(-rank, rank - 1)
    ax = axis % rank

    def same_off_axis(v: Value) -> bool:
        return (
            v.type.dtype is first.type.dtype
            and v.rank == rank
            and all(d == e for i, (d, e) in enumerate(zip(v.type.shape, first.type.shape, strict=True)) if i != ax)
        )

    def fresh_part() -> Value:
        shape = list(first.type.shape)
        shape[ax] = b.draws.integer(1, b.max_dim)
        return b.fresh(TensorType(tuple(shape), first.type.dtype), ints=first.ints)

    parts = [first]
    for _ in range(b.draws.integer(0, 2)):
        parts.append(b.pick(same_off_axis, fresh_part))
    if b.draws.boolean():
        parts.reverse()
    b.add_node(kind, parts, attrs={"axis": axis})


def _factor_shape(b: Builder, size: int) -> tuple[int, ...]:
    """A random shape with ``size`` elements and 1..3 dimensions."""
    primes = []
    n, p = size, 2
    while n > 1:
        while n % p == 0:
            primes.append(p)
            n //= p
        p += 1
    dims = [1] * b.draws.integer(1, MAX_RANK)
    for p in primes:
        dims[b.draws.integer(0, len(dims) - 1)] *= p
    return tuple(dims)


def _build_reshape(b: Builder, kind: OpKind) -> None:
    x = b.any_value()
    b.add_node(kind, [x], attrs={"shape": list(_factor_shape(b, x.type.size))})


def _build_sgd_momentum(b: Builder, kind: OpKind) -> None:
    w = b.any_float()
    if w.rank == 0:
        g = b.pick(lambda v: v.type == w.type, None)
        v = b.pick(lambda v: v.type == w.type, None)
    else:
        g, v = b.of_type(w.type), b.of_type(w.type)
    attrs: dict[str, object] = {}
    if b.draws.boolean():
        attrs["lr"] = b.draws.choice([0.01, 0.05, 0.5])
        attrs["mu"] = b.draws.choice([0.9, 0.5, 0.0])
    b.add_node(kind, [w, g, v], attrs=attrs)


def _build_quantization_profile(b: Builder, kind: OpKind) -> None:
    x = b.any_float()
    name = b.node_name(kind)
    bins = b.draws.integer(1, 8)
    state = (b.owned(name, "minmax", TensorType((2,), F32)), b.owned(name, "hist", TensorType((bins,), F32)))
    attrs: dict[str, object] = {}
    if b.draws.boolean():
        lo = b.draws.choice([-4.0, -2.0, -1.0, 0.0])
        attrs = {"lo": lo, "hi": lo + b.draws.choice([1.0, 2.0, 8.0])}
    b.add_node(kind, [x], state=state, attrs=attrs, name=name)


def _build_embedding_update(b: Builder, kind: OpKind) -> None:
    # ids (the spec's index input): values in [0, id_high) only, never a wide int32
    name = b.node_name(kind)
    ids = b.pick(
        lambda v: v.id_high is not None,
        lambda: b.fresh(TensorType(b.shape(max_rank=2), I32), ints=b.id_range()),
    )
    rows = (ids.id_high or 1) + b.draws.integer(0, 2)
    cols = b.draws.integer(1, 3)
    grad = b.of_type(TensorType(ids.type.shape + (cols,), F32))
    table = b.owned(name, "table", TensorType((rows, cols), F32))
    b.add_node(kind, [ids, grad], state=(table,), name=name)


def _build_accumulate(b: Builder, kind: OpKind) -> None:
    x = b.any_float(min_rank=1)
    name = b.node_name(kind)
    acc = b.owned(name, "acc", x.type)
    b.add_node(kind, [x], state=(acc,), name=name)


def save_target(b: Builder, value: Value) -> str:
    """An unsaved placeholder of the value's type: one that nodes read (the
    hazard) when the swarm allows, else a fresh output."""
    # a placeholder carries what it was saved into the next run: its [low, high)
    # must hold the value's, so that readers that need ids still see ids
    ints = value.ints

    def ok(s: Storage) -> bool:
        return (
            s.kind is StorageKind.PLACEHOLDER
            and s.name not in b.saved
            and s.shape == value.type.shape  # the value's type, without making a TensorType per storage
            and s.dtype is value.type.dtype
            and (ints is None or _holds(b.ints[s.name], ints))
        )

    cands = [s.name for s in reversed(b.storage) if ok(s)] if Feature.READ_SAVE in b.features else []
    i = b.draws.integer(0, len(cands))
    if i < len(cands):
        return cands[i]
    readable = Feature.READ_SAVE in b.features
    return b.new_storage(value.type, StorageKind.PLACEHOLDER, ints=value.ints, readable=readable).ref.name


def _holds(outer: tuple[int, int], inner: tuple[int, int]) -> bool:
    return outer[0] <= inner[0] and inner[1] <= outer[1]


def _build_save(b: Builder, kind: OpKind) -> None:
    if Feature.SAVE_CYCLE in b.features and len(b.nodes) + 2 <= b.max_nodes and b.draws.boolean():
        _build_swap(b)
        return
    value = b.pick(lambda v: v.rank >= 1, lambda: b.fresh(TensorType(b.shape(), F32)))
    b.save(value, save_target(b, value))


def _build_swap(b: Builder) -> None:
    """save(p -> q) and save(q -> p): each save reads the other's target, so the
    memory edges form a cycle the compiler must break first (DESIGN §4). With
    room, sometimes through views: save(reshape(p) -> q) and save(reshape(q) ->
    p), q of p's size in a shape of its own, so that a save reads the other's
    target only through a view (what the cycle breaker must see too)."""

    def unsaved_placeholder(v: Value) -> bool:
        return v.storage is StorageKind.PLACEHOLDER and v.ref.name not in b.saved and v.type.dtype is F32

    p = b.pick(unsaved_placeholder, lambda: b.new_storage(TensorType(b.shape(), F32), StorageKind.PLACEHOLDER))
    if len(b.nodes) + 4 <= b.max_nodes and b.draws.boolean():
        q = b.new_storage(TensorType(_factor_shape(b, p.type.size), F32), StorageKind.PLACEHOLDER)
        b.save(_view_as(b, p, q.type), q.ref.name)
        b.save(_view_as(b, q, p.type), p.ref.name)
        return
    q = b.pick(
        lambda v: unsaved_placeholder(v) and v.type == p.type and v.ref != p.ref,
        lambda: b.new_storage(p.type, StorageKind.PLACEHOLDER),
    )
    b.save(p, q.ref.name)
    b.save(q, p.ref.name)


def _view_as(b: Builder, v: Value, t: TensorType) -> Value:
    """A reshape view of ``v`` (of ``t``'s size) with type ``t``."""
    return b.value_of(b.add_node(OpKind.RESHAPE, [v], attrs={"shape": list(t.shape)}).name)


Recipe = Callable[[Builder, OpKind], None]


def _plain_elementwise(spec: OpSpec, arity: int) -> bool:
    """An elementwise op of ``arity`` data inputs with no state and no
    attributes: its operands need nothing but matching types."""
    return spec.elementwise and len(spec.inputs) == arity and not spec.variadic and not spec.state and not spec.attrs


def _binary_float(spec: OpSpec) -> bool:
    return _plain_elementwise(spec, 2) and all(spec.input_dtype(i) is F32 for i in range(2))


# Ops whose operands need more than the spec's types say: a recipe each.
SPECIAL: dict[OpKind, Recipe] = {
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


def recipe_for(spec: OpSpec) -> Recipe:
    """The operand recipe of an op: its own in ``SPECIAL``, else the generic
    one its spec calls for; ``LookupError`` naming the op if neither fits."""
    if spec.kind in SPECIAL:
        return SPECIAL[spec.kind]
    if _binary_float(spec):
        return _build_binary
    if _plain_elementwise(spec, 1):
        return _build_unary_any if spec.input_dtype(0) is None else _build_unary_float
    raise LookupError(f"no operand recipe for op '{spec.name}': give it one in fuzz.strategies.recipes.SPECIAL")


BUILDERS: dict[OpKind, Recipe] = {kind: recipe_for(spec) for kind, spec in OPS.items()}

# Single-result elementwise ops in table order, for patterns that need one.
UNARY = tuple(k for k, s in OPS.items() if k not in SPECIAL and _plain_elementwise(s, 1) and len(s.results) == 1)
BINARY = tuple(k for k, s in OPS.items() if k not in SPECIAL and _binary_float(s) and len(s.results) == 1)
