"""Declarative definitions the whole project derives from: ops and invariants."""

from specs.invariants import INVARIANTS, Invariant, Level, invariant
from specs.ops import OPS, AttrKind, AttrSpec, Dtype, FastEnum, OpKind, OpSpec, StateSpec, op_spec
from specs.shapes import ShapeError, TensorType

__all__ = [
    "INVARIANTS", "Invariant", "Level", "invariant",
    "OPS", "AttrKind", "AttrSpec", "Dtype", "FastEnum", "OpKind", "OpSpec", "StateSpec", "op_spec",
    "ShapeError", "TensorType",
]
