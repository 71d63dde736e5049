"""The vocabulary of the op table (``specs.ops``): dtypes, op kinds, attribute
kinds, and ``OpSpec``, the declaration of one operation. Data and small
declarations only; it never imports ``refcompiler``."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable

from specs.shapes import TensorType

__all__ = ["AttrKind", "AttrSpec", "Dtype", "FastEnum", "OpKind", "OpSpec", "StateSpec"]


class FastEnum(enum.Enum):
    """An enum whose members hash with object's C hash rather than Enum's
    Python-level ``__hash__`` (members are singletons, so identity is equality):
    the base of the kinds the compiler keys hot tables by."""

    __hash__ = object.__hash__


class Dtype(FastEnum):
    FLOAT32 = "float32"
    INT32 = "int32"

    @property
    def itemsize(self) -> int:
        return 4


class OpKind(FastEnum):
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


class AttrKind(FastEnum):
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
    ``uniform_dtypes`` lists the dtypes the op also takes *on every input at
    once*: when input 0 has one of them, every input needs that dtype (``max``
    on int32 x int32); otherwise ``input_dtypes`` applies.
    ``index_inputs`` name the int32 inputs whose values index the first axis
    of the op's state (``embedding_update``'s ids): each element must be in
    [0, rows), or the run fails; every other int32 value may be any int32.
    ``shape_rule(inputs, state, attrs)`` returns the result types or raises
    ``shapes.ShapeError``.
    """

    kind: OpKind
    inputs: tuple[str, ...]
    results: tuple[str, ...]
    shape_rule: Callable[..., tuple[TensorType, ...]]
    doc: str
    input_dtypes: tuple[Dtype | None, ...] = ()
    uniform_dtypes: tuple[Dtype, ...] = ()
    index_inputs: tuple[str, ...] = ()
    variadic: bool = False
    state: tuple[StateSpec, ...] = ()
    attrs: tuple[AttrSpec, ...] = ()
    inplace: tuple[tuple[str, ...], ...] = ()
    # each result element depends only on the same element of each (broadcast) input
    elementwise: bool = False
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

    def index_positions(self) -> tuple[int, ...]:
        """Positions of the ``index_inputs``."""
        return tuple(i for i, n in enumerate(self.inputs) if n in self.index_inputs)

    def input_dtype(self, position: int, first: Dtype | None = None) -> Dtype | None:
        """The dtype input ``position`` needs (``None``: any), given ``first``,
        the dtype of input 0 (which picks one of ``uniform_dtypes``)."""
        if first is not None and first in self.uniform_dtypes:
            return first
        if not self.input_dtypes:
            return Dtype.FLOAT32
        if self.variadic:
            return self.input_dtypes[0]
        return self.input_dtypes[position]
