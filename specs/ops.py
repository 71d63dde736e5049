"""The op table: every operation defined once, declaratively (DESIGN §3).

Everything else in the project derives from this table: the verifier's arity,
dtype, attribute and shape checks; lowering (which operands are ``@in``,
``@out`` and ``@inout``); the buffer-sharing pass (the per-result in-place
lists); the printers; the fuzzing generators; and the kernel table, which a
test checks to be complete against this one.

This module holds data and small declarations only; it never imports
``refcompiler``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable

from specs import shapes
from specs.shapes import TensorType

__all__ = [
    "AttrKind",
    "AttrSpec",
    "Dtype",
    "OpKind",
    "OpSpec",
    "StateSpec",
    "OPS",
    "op_spec",
]


class Dtype(enum.Enum):
    FLOAT32 = "float32"
    INT32 = "int32"

    @property
    def itemsize(self) -> int:
        return 4


class OpKind(enum.Enum):
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    MAX = "max"
    RELU = "relu"
    NEG = "neg"
    TANH = "tanh"
    EXP = "exp"
    IDENTITY = "identity"
    MATMUL = "matmul"
    TRANSPOSE = "transpose"
    REDUCE_SUM = "reduce_sum"
    CONCAT = "concat"
    ROLL = "roll"
    RESHAPE = "reshape"
    ADD_SUB = "add_sub"
    SGD_MOMENTUM = "sgd_momentum"
    QUANTIZATION_PROFILE = "quantization_profile"
    EMBEDDING_UPDATE = "embedding_update"
    ACCUMULATE = "accumulate"
    SAVE = "save"


class AttrKind(enum.Enum):
    """The JSON type an attribute value takes."""

    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    INT_LIST = "int list"
    AXES = "int, int list or null"
    NAME = "storage name"


@dataclass(frozen=True)
class AttrSpec:
    name: str
    kind: AttrKind
    default: object = None
    required: bool = False


@dataclass(frozen=True)
class StateSpec:
    """A state operand: an owned variable the op reads and writes (``@inout``)."""

    name: str
    doc: str


@dataclass(frozen=True)
class OpSpec:
    """One operation.

    ``inputs`` name the data operands (``@in``); ``variadic`` means the single
    declared input repeats one or more times. ``results`` name the data results
    (``@out``), produced in this order. ``state`` lists owned-variable operands
    (``@inout``). ``inplace[k]`` lists the inputs whose buffer result ``k`` may
    overwrite; the buffer must also have the result's shape and dtype.
    ``input_dtypes`` constrains each input (``None``: any dtype).
    ``shape_rule(inputs, state, attrs)`` returns the result types or raises
    ``shapes.ShapeError``.
    """

    kind: OpKind
    inputs: tuple[str, ...]
    results: tuple[str, ...]
    shape_rule: Callable[..., tuple[TensorType, ...]]
    doc: str
    input_dtypes: tuple[Dtype | None, ...] = ()
    variadic: bool = False
    state: tuple[StateSpec, ...] = ()
    attrs: tuple[AttrSpec, ...] = ()
    inplace: tuple[tuple[str, ...], ...] = ()
    view: bool = False
    effect: bool = False

    @property
    def name(self) -> str:
        return self.kind.value

    def attr(self, name: str) -> AttrSpec:
        for a in self.attrs:
            if a.name == name:
                return a
        raise KeyError(name)

    def inplace_inputs(self, result: int) -> tuple[int, ...]:
        """Positions of the inputs result ``result`` may overwrite."""
        if not self.inplace:
            return ()
        names = self.inplace[result]
        return tuple(i for i, n in enumerate(self.inputs) if n in names)

    def input_dtype(self, position: int) -> Dtype | None:
        if not self.input_dtypes:
            return Dtype.FLOAT32
        if self.variadic:
            return self.input_dtypes[0]
        return self.input_dtypes[position]


F32 = Dtype.FLOAT32


def _binary(kind: OpKind, doc: str) -> OpSpec:
    return OpSpec(
        kind=kind,
        inputs=("a", "b"),
        results=("y",),
        input_dtypes=(F32, F32),
        shape_rule=shapes.broadcast,
        inplace=(("a", "b"),),
        doc=doc,
    )


def _unary(kind: OpKind, doc: str) -> OpSpec:
    return OpSpec(
        kind=kind,
        inputs=("x",),
        results=("y",),
        input_dtypes=(F32,),
        shape_rule=shapes.same_as_first,
        inplace=(("x",),),
        doc=doc,
    )


_TABLE: tuple[OpSpec, ...] = (
    _binary(OpKind.ADD, "y = a + b, numpy broadcasting"),
    _binary(OpKind.SUB, "y = a - b, numpy broadcasting"),
    _binary(OpKind.MUL, "y = a * b, numpy broadcasting"),
    _binary(OpKind.MAX, "y = maximum(a, b), numpy broadcasting"),
    _unary(OpKind.RELU, "y = maximum(x, 0)"),
    _unary(OpKind.NEG, "y = -x"),
    _unary(OpKind.TANH, "y = tanh(x)"),
    _unary(OpKind.EXP, "y = exp(x)"),
    OpSpec(
        kind=OpKind.IDENTITY,
        inputs=("x",),
        results=("y",),
        input_dtypes=(None,),
        shape_rule=shapes.same_as_first,
        inplace=(("x",),),
        doc="y = a copy of x (any dtype); inserted to break save cycles",
    ),
    OpSpec(
        kind=OpKind.MATMUL,
        inputs=("a", "b"),
        results=("y",),
        input_dtypes=(F32, F32),
        shape_rule=shapes.matmul,
        inplace=((),),
        doc="y = np.matmul(a, b), batched and broadcast as numpy does",
    ),
    OpSpec(
        kind=OpKind.TRANSPOSE,
        inputs=("x",),
        results=("y",),
        input_dtypes=(None,),
        attrs=(AttrSpec("perm", AttrKind.INT_LIST),),
        shape_rule=shapes.transpose,
        inplace=((),),
        doc="y = np.transpose(x, perm); perm defaults to reversed axes",
    ),
    OpSpec(
        kind=OpKind.REDUCE_SUM,
        inputs=("x",),
        results=("y",),
        input_dtypes=(F32,),
        attrs=(AttrSpec("axis", AttrKind.AXES), AttrSpec("keepdims", AttrKind.BOOL, False)),
        shape_rule=shapes.reduce,
        inplace=((),),
        doc="y = x.sum(axis, keepdims=keepdims); axis defaults to all axes",
    ),
    OpSpec(
        kind=OpKind.CONCAT,
        inputs=("xs",),
        variadic=True,
        results=("y",),
        input_dtypes=(None,),
        attrs=(AttrSpec("axis", AttrKind.INT, 0),),
        shape_rule=shapes.concat,
        inplace=((),),
        doc="y = np.concatenate(xs, axis); a negative axis counts from the end",
    ),
    OpSpec(
        kind=OpKind.ROLL,
        inputs=("x",),
        results=("y",),
        input_dtypes=(None,),
        shape_rule=shapes.roll,
        inplace=((),),
        doc="y = np.roll(x, 1, axis=0): a stencil, never in place",
    ),
    OpSpec(
        kind=OpKind.RESHAPE,
        inputs=("x",),
        results=("y",),
        input_dtypes=(None,),
        attrs=(AttrSpec("shape", AttrKind.INT_LIST, required=True),),
        shape_rule=shapes.reshape,
        inplace=((),),
        view=True,
        doc="y = x.reshape(shape); lowered to a view that aliases x",
    ),
    OpSpec(
        kind=OpKind.ADD_SUB,
        inputs=("a", "b"),
        results=("s", "d"),
        input_dtypes=(F32, F32),
        shape_rule=shapes.add_sub,
        # s is produced first and d still reads a and b: s may overwrite nothing.
        inplace=((), ("a", "b")),
        doc="s = a + b, then d = a - b",
    ),
    OpSpec(
        kind=OpKind.SGD_MOMENTUM,
        inputs=("w", "g", "v"),
        results=("w_new", "v_new"),
        input_dtypes=(F32, F32, F32),
        attrs=(AttrSpec("lr", AttrKind.FLOAT, 0.01), AttrSpec("mu", AttrKind.FLOAT, 0.9)),
        shape_rule=shapes.sgd_momentum,
        # w_new is produced first; v_new still reads v (and g), never w.
        inplace=(("w",), ("v",)),
        doc="v_new = mu*v + g; w_new = w - lr*v_new (float32 arithmetic)",
    ),
    OpSpec(
        kind=OpKind.QUANTIZATION_PROFILE,
        inputs=("x",),
        results=(),
        input_dtypes=(F32,),
        state=(
            StateSpec("minmax", "float32[2]: running [min, max]"),
            StateSpec("hist", "float32[k]: counts in k equal bins over [lo, hi)"),
        ),
        attrs=(AttrSpec("lo", AttrKind.FLOAT, -4.0), AttrSpec("hi", AttrKind.FLOAT, 4.0)),
        shape_rule=shapes.quantization_profile,
        effect=True,
        doc=(
            "minmax = [min(old, x.min()), max(old, x.max())]; hist[j] += count of x in "
            "bin j of k equal bins over [lo, hi), values outside (and NaN) clipped to "
            "the end bins (NaN to bin 0)"
        ),
    ),
    OpSpec(
        kind=OpKind.EMBEDDING_UPDATE,
        inputs=("ids", "grad"),
        results=("rows",),
        input_dtypes=(Dtype.INT32, F32),
        state=(StateSpec("table", "float32[r, c]: the embedding table"),),
        shape_rule=shapes.embedding_update,
        inplace=((),),
        effect=True,
        doc="rows = table[ids] before the update; then np.add.at(table, ids, grad)",
    ),
    OpSpec(
        kind=OpKind.ACCUMULATE,
        inputs=("x",),
        results=("total",),
        input_dtypes=(F32,),
        state=(StateSpec("acc", "float32, x's shape: the running sum"),),
        shape_rule=shapes.accumulate,
        inplace=((),),
        effect=True,
        doc="acc += x; total = a copy of the new acc",
    ),
    OpSpec(
        kind=OpKind.SAVE,
        inputs=("x",),
        results=(),
        input_dtypes=(None,),
        attrs=(AttrSpec("target", AttrKind.NAME, required=True),),
        shape_rule=shapes.no_results,
        effect=True,
        doc="writes x into placeholder `target` at function exit",
    ),
)

OPS: dict[OpKind, OpSpec] = {spec.kind: spec for spec in _TABLE}


def op_spec(kind: OpKind) -> OpSpec:
    return OPS[kind]
