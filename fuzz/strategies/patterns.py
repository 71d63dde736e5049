"""Patterns of several nodes a move may build (``Feature.DIAMOND``,
``Feature.CHAIN``, ``Feature.TWINS``), and the final step that saves unread results."""

from __future__ import annotations

from typing import Callable

from specs import OpKind, TensorType

from refcompiler.graph_passes.dce import has_effect
from refcompiler.limits import MAX_RANK

from fuzz.strategies.builder import F32, Builder, Value
from fuzz.strategies.recipes import BINARY, BUILDERS, UNARY, moves_along_first_axis, save_target

__all__ = ["build_diamond", "build_chain", "build_twins", "build_outputs", "produced"]

# Whether a diamond's left branch is a view (when reshape is enabled).
_VIEW = (False, True, True)

# Whether a diamond with a view joins the view with x itself, the view then
# seeing x as ``[1, *shape]`` (broadcast against x): the join's result may take
# over x's buffer through the view, not as x, whose type differs (IR-6). One
# time in four, shrinking to no.
_JOIN_X = (False, False, False, True)


def produced(b: Builder, t: TensorType, enabled: list[OpKind]) -> Value:
    """A new activation of type ``t`` (float): an elementwise op of the
    enabled set (``neg`` when none is) on fresh storage."""
    ops = [k for k in UNARY if k in enabled and k is not OpKind.IDENTITY] or [OpKind.NEG]
    kind = b.draws.choice(ops)
    b.add_node(kind, [b.fresh(t)])
    return b.values[-1]


def build_diamond(b: Builder, enabled: list[OpKind]) -> None:
    """x -> left (a view of x, or elementwise) and right (elementwise: a
    candidate to overwrite x in place), then join(left, right). The hazard
    of buffer sharing: right may reuse x only if nothing reads x later,
    also through left's view. Sometimes (``_JOIN_X``) the view sees x as
    ``[1, *shape]``, the join is join(left, x) instead and an elementwise op
    reads its result: that result may reuse x's buffer only in the view's
    role, never in x's, of another type. Ops come from the enabled set where
    it has any."""
    if len(b.nodes) + 3 > b.max_nodes:
        return
    unary = [k for k in UNARY if k in enabled] or [OpKind.NEG]
    binary = [k for k in BINARY if k in enabled] or [OpKind.ADD]
    # mostly an activation: only those may be overwritten in place (a fourth
    # node makes one when there is none and room is left)
    room = len(b.nodes) + 4 <= b.max_nodes
    x = b.activation(
        lambda v: v.is_float and v.rank >= 1,
        (lambda: produced(b, TensorType(b.shape(), F32), enabled)) if room else (lambda: b.fresh(TensorType(b.shape(), F32))),
        lambda: b.any_float(min_rank=1),
    )
    # a view two times in three: reads through a view are what sharing easily misses
    view = OpKind.RESHAPE in enabled and b.draws.choice(_VIEW)
    left_kind = OpKind.RESHAPE if view else b.draws.choice(unary)
    join_x = view and x.rank < MAX_RANK and b.draws.choice(_JOIN_X)
    attrs = {"shape": [1] * join_x + list(x.type.shape)} if left_kind is OpKind.RESHAPE else {}
    left = b.add_node(left_kind, [x], attrs=attrs)
    if join_x:
        pair = [b.value_of(left.name), x]
    else:
        right = b.add_node(b.draws.choice(unary), [x])
        pair = [b.value_of(left.name), b.value_of(right.name)]
    if b.draws.boolean():
        pair.reverse()
    join = b.add_node(b.draws.choice(binary), pair)
    if join_x:  # read, so that no save's copy elimination takes the join's result
        b.add_node(b.draws.choice(unary), [b.value_of(join.name)])


# Whether twins take their operands in the same order: one time in four,
# shrinking to commuted.
_SAME_ORDER = (False, False, False, True)


def build_twins(b: Builder, enabled: list[OpKind]) -> None:
    """op(x, y) then op(y, x), or op(x, y) again one time in four, x and y
    distinct: two nodes common-subexpression elimination merges, or, commuted,
    must not unless the op commutes in bits (sub does not; nor does max on
    float32: numpy's maximum of two equal values is its second, so -0.0 and
    +0.0 tell max(x, y) from max(y, x), in a graph with ties). Both results
    are saved at once (later nodes may read them too): a dead twin is removed
    before any pass could merge it, and one that only a sum reads loses the
    sign of a zero. Ops come from the enabled set where it has any."""
    if len(b.nodes) + 4 > b.max_nodes:
        return
    binary = [k for k in BINARY if k in enabled] or [OpKind.ADD]
    kind = b.draws.choice(binary)
    x = b.any_float(min_rank=1)
    y = b.pick(lambda v: v.type == x.type and v.ref != x.ref, lambda: b.fresh(x.type))
    first = b.add_node(kind, [x, y])
    second = b.add_node(kind, [x, y] if b.draws.choice(_SAME_ORDER) else [y, x])
    for node in (first, second):
        value = b.value_of(node.name)
        b.save(value, save_target(b, value))


# Single-input ops a chain may use: elementwise ones run in place; a stencil,
# a transpose or a reduction must not.
_CHAIN_OPS = (OpKind.RELU, OpKind.NEG, OpKind.TANH, OpKind.EXP, OpKind.IDENTITY, OpKind.ROLL, OpKind.TRANSPOSE, OpKind.RESHAPE, OpKind.REDUCE_SUM)


def build_chain(b: Builder, enabled: list[OpKind]) -> None:
    """x -> op1 -> op2 (-> op3), each op reading the previous result only: the
    shape in which a result may take over its input's buffer, and where an op
    that must not run in place (a stencil) shows it."""
    ops = [k for k in _CHAIN_OPS if k in enabled] or [OpKind.NEG]
    # a stencil twice as often: it is the op here that must not run in place, and
    # the one a wrong in-place declaration (mutant inplace-stencil) shows on
    ops += [OpKind.ROLL] if OpKind.ROLL in ops else []
    length = b.draws.integer(2, 3)
    if len(b.nodes) + length > b.max_nodes:
        return
    # mostly an activation whose first axis a stencil moves along: the first
    # op of the chain may then overwrite it in place too
    x = b.activation(
        lambda v: v.is_float and moves_along_first_axis(v),
        lambda: b.fresh(TensorType(b.shape(first=2), F32)),
        lambda: b.any_float(min_rank=1),
    )
    for _ in range(length):
        kind = b.draws.choice(ops)
        if kind in (OpKind.ROLL, OpKind.TRANSPOSE, OpKind.RESHAPE) and x.rank == 0:
            kind = OpKind.NEG
        BUILDERS[kind](_Only(b, x), kind)
        x = b.values[-1]


class _Only:
    """A builder whose every operand pick returns ``value`` (for a chain)."""

    def __init__(self, b: Builder, value: Value):
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

    def activation(self, want: Callable[[Value], bool], make: Callable[[], Value], otherwise: Callable[[], Value]) -> Value:
        # a recipe that asks for an activation (roll) must read the chain's value too: it
        # took any earlier result before, an int32 one included, and the next op failed G-1
        return self._value


def build_outputs(b: Builder) -> None:
    """Save results no node reads (rank >= 1) into placeholders, those of
    the nodes drawn to keep; and the last of them all the same when no node
    would have an effect otherwise. Such a graph is all dead code: graph DCE
    removes every node, and the case checks an empty program (before, three
    valid graphs in ten, a few of them ten nodes long)."""
    sinks = [v for v in b.values if v.storage is None and v.ref.name not in b.users and v.rank >= 1]
    for v in sinks:
        if len(b.nodes) >= b.max_nodes:
            return
        if v.ref.name in b.keep:
            b.save(v, save_target(b, v))
    if sinks and len(b.nodes) < b.max_nodes and not any(has_effect(n) for n in b.nodes):
        b.save(sinks[-1], save_target(b, sinks[-1]))
