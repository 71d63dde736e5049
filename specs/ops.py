"""The op table: every operation defined once, declaratively (DESIGN §3).

Everything else in the project derives from this table: the verifier's arity,
dtype, attribute and shape checks; lowering (which operands are ``@in``,
``@out`` and ``@inout``); the buffer-sharing pass (the per-result in-place
lists); the printers; the fuzzing generators; and the kernel table, which a
test checks to be complete against this one.

This module holds data only (the declarations it uses are ``specs.opspec``'s,
re-exported here); it never imports ``refcompiler``.
"""

from __future__ import annotations

from specs import shapes
from specs.opspec import AttrKind, AttrSpec, Dtype, FastEnum, OpKind, OpSpec, StateSpec

__all__ = [
    "AttrKind",
    "AttrSpec",
    "Dtype",
    "FastEnum",
    "OpKind",
    "OpSpec",
    "StateSpec",
    "OPS",
    "op_spec",
]


F32 = Dtype.FLOAT32


def _binary(kind: OpKind, doc: str, *, also: tuple[Dtype, ...] = ()) -> OpSpec:
    return OpSpec(
        kind=kind,
        inputs=("a", "b"),
        results=("y",),
        input_dtypes=(F32, F32),
        uniform_dtypes=also,
        shape_rule=shapes.broadcast,
        inplace=(("a", "b"),),
        elementwise=True,
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
        elementwise=True,
        doc=doc,
    )


_TABLE: tuple[OpSpec, ...] = (
    _binary(OpKind.ADD, "y = a + b, numpy broadcasting"),
    _binary(OpKind.SUB, "y = a - b, numpy broadcasting"),
    _binary(OpKind.MUL, "y = a * b, numpy broadcasting"),
    # int32 x int32 too (ONNX's Max on int32); a float32 x int32 pair is still refused
    _binary(OpKind.MAX, "y = maximum(a, b), numpy broadcasting; float32 or int32, both alike", also=(Dtype.INT32,)),
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
        elementwise=True,
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
        elementwise=True,
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
        elementwise=True,
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
        index_inputs=("ids",),
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
