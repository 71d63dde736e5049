"""Spec completeness: every op has every meaning, and the meanings agree.

Every ``OpKind`` must have a spec in ``specs.OPS`` with a shape rule, a kernel
in ``refcompiler.kernels.KERNELS`` and a printer entry in
``refcompiler.printer.OP_SYMBOLS``. (Later issues add the lowering and the
generators to ``MEANINGS``.) Each check goes through a helper that is also
run on a deliberately broken table, so that the check itself is known to bite.
Beyond presence: on a sample instance of every op, the kernel's results have
exactly the types the shape rule promises, and the kernel writes none of its
arguments.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np
import pytest

from specs import OPS, Dtype, OpKind, OpSpec, TensorType
from specs.ops import AttrKind

from refcompiler.kernels import KERNELS, Kernel
from refcompiler.printer import OP_SYMBOLS

F32, I32 = Dtype.FLOAT32, Dtype.INT32

# Every table that must hold an entry for every op.
MEANINGS: dict[str, Mapping[OpKind, object]] = {
    "spec (specs.OPS)": OPS,
    "kernel (refcompiler.kernels.KERNELS)": KERNELS,
    "printer entry (refcompiler.printer.OP_SYMBOLS)": OP_SYMBOLS,
}


def missing(table: Mapping[OpKind, object]) -> list[OpKind]:
    """Op kinds that ``table`` has no (non-None) entry for, in declaration order."""
    return [kind for kind in OpKind if table.get(kind) is None]


def without_shape_rule(specs: Mapping[OpKind, OpSpec]) -> list[OpKind]:
    return [kind for kind, spec in specs.items() if not callable(spec.shape_rule)]


@pytest.mark.parametrize("meaning", sorted(MEANINGS))
def test_every_op_has_this_meaning(meaning):
    assert missing(MEANINGS[meaning]) == []


def test_every_spec_has_a_shape_rule_and_its_own_kind():
    assert without_shape_rule(OPS) == []
    assert all(spec.kind is kind for kind, spec in OPS.items())


@pytest.mark.parametrize("meaning", sorted(MEANINGS))
def test_completeness_check_catches_a_table_with_one_op_removed(meaning):
    table = dict(MEANINGS[meaning])
    del table[OpKind.ROLL]
    assert missing(table) == [OpKind.ROLL]
    table[OpKind.ROLL] = None
    assert missing(table) == [OpKind.ROLL]


def test_shape_rule_check_catches_a_spec_without_one():
    from dataclasses import replace

    specs = dict(OPS)
    specs[OpKind.CONCAT] = replace(specs[OpKind.CONCAT], shape_rule=None)
    assert without_shape_rule(specs) == [OpKind.CONCAT]


# ------------------------------------------------------------ table shape


@pytest.mark.parametrize("kind", list(OpKind), ids=lambda k: k.value)
def test_spec_is_internally_consistent(kind):
    spec = OPS[kind]
    assert spec.name == kind.value
    # one in-place list per result (or none at all for ops without results)
    assert len(spec.inplace) == len(spec.results) or (not spec.inplace and not spec.results)
    for names in spec.inplace:
        assert set(names) <= set(spec.inputs)
    assert not spec.input_dtypes or len(spec.input_dtypes) == len(spec.inputs)
    assert len({a.name for a in spec.attrs}) == len(spec.attrs)
    for a in spec.attrs:
        assert isinstance(a.kind, AttrKind)
        if a.required:
            assert a.default is None, "a required attribute has no default"
    if spec.state or kind is OpKind.SAVE:
        assert spec.effect, "an op that writes module storage has an effect (DCE must keep it)"


# DESIGN §3, column "in-place list per result": the contract buffer sharing relies on.
INPLACE = {
    **{k: (("a", "b"),) for k in (OpKind.ADD, OpKind.SUB, OpKind.MUL, OpKind.MAX)},
    **{k: (("x",),) for k in (OpKind.RELU, OpKind.NEG, OpKind.TANH, OpKind.EXP, OpKind.IDENTITY)},
    **{k: ((),) for k in (OpKind.MATMUL, OpKind.TRANSPOSE, OpKind.REDUCE_SUM, OpKind.CONCAT, OpKind.ROLL, OpKind.RESHAPE)},
    OpKind.ADD_SUB: ((), ("a", "b")),
    OpKind.SGD_MOMENTUM: (("w",), ("v",)),
    OpKind.EMBEDDING_UPDATE: ((),),
    OpKind.ACCUMULATE: ((),),
    OpKind.QUANTIZATION_PROFILE: (),
    OpKind.SAVE: (),
}


def test_inplace_lists_are_those_of_the_design():
    assert missing(INPLACE) == []
    assert {k: tuple(tuple(sorted(x)) for x in OPS[k].inplace) for k in OpKind} == INPLACE


def test_only_reshape_is_a_view_and_only_owners_and_save_have_effects():
    assert [k for k in OpKind if OPS[k].view] == [OpKind.RESHAPE]
    assert {k for k in OpKind if OPS[k].effect} == {
        OpKind.QUANTIZATION_PROFILE, OpKind.EMBEDDING_UPDATE, OpKind.ACCUMULATE, OpKind.SAVE,
    }


# ------------------------------------------------------------ kernels vs shape rules


def t(*shape: int, dtype: Dtype = F32) -> TensorType:
    return TensorType(tuple(shape), dtype)


# One instance of every op: (input types, state types, attributes given).
SAMPLES: dict[OpKind, tuple[list[TensorType], list[TensorType], dict[str, object]]] = {
    OpKind.ADD: ([t(2, 3), t(3)], [], {}),
    OpKind.SUB: ([t(2, 3), t(2, 3)], [], {}),
    OpKind.MUL: ([t(4), t(1)], [], {}),
    OpKind.MAX: ([t(2, 1), t(1, 3)], [], {}),
    OpKind.RELU: ([t(2, 3)], [], {}),
    OpKind.NEG: ([t(5)], [], {}),
    OpKind.TANH: ([t(2, 2)], [], {}),
    OpKind.EXP: ([t(3)], [], {}),
    OpKind.IDENTITY: ([t(3, dtype=I32)], [], {}),
    OpKind.MATMUL: ([t(2, 3, 4), t(4, 5)], [], {}),
    OpKind.TRANSPOSE: ([t(2, 3, 4)], [], {"perm": (2, 0, 1)}),
    OpKind.REDUCE_SUM: ([t(2, 3, 4)], [], {"axis": (0, 2), "keepdims": True}),
    OpKind.CONCAT: ([t(2, 3), t(2, 1), t(2, 2)], [], {"axis": -1}),
    OpKind.ROLL: ([t(4, 2)], [], {}),
    OpKind.RESHAPE: ([t(2, 3)], [], {"shape": (3, 2)}),
    OpKind.ADD_SUB: ([t(2, 3), t(2, 3)], [], {}),
    OpKind.SGD_MOMENTUM: ([t(3), t(3), t(3)], [], {"lr": 0.1}),
    OpKind.QUANTIZATION_PROFILE: ([t(5)], [t(2), t(4)], {"lo": -1.0, "hi": 1.0}),
    OpKind.EMBEDDING_UPDATE: ([t(3, dtype=I32), t(3, 2)], [t(4, 2)], {}),
    OpKind.ACCUMULATE: ([t(2, 2)], [t(2, 2)], {}),
    OpKind.SAVE: ([t(3)], [], {"target": "P"}),
}


def full_attrs(spec: OpSpec, given: dict[str, object]) -> dict[str, object]:
    return {a.name: given.get(a.name, a.default) for a in spec.attrs}


def array_of(tt: TensorType, rng: np.random.Generator) -> np.ndarray:
    if tt.dtype is I32:
        return rng.integers(0, 2, size=tt.shape, dtype=np.int32)
    return rng.standard_normal(tt.shape).astype(np.float32)


def kernel_problems(kind: OpKind, kernel: Kernel) -> list[str]:
    """What is wrong with ``kernel`` on ``kind``'s sample: result types against the
    shape rule, new state types against the state, arguments written."""
    spec = OPS[kind]
    inputs, state, given = SAMPLES[kind]
    attrs = full_attrs(spec, given)
    want = spec.shape_rule(inputs, state, attrs)
    rng = np.random.default_rng(0)
    ins = [array_of(tt, rng) for tt in inputs]
    sts = [array_of(tt, rng) for tt in state]
    before = [a.copy() for a in ins + sts]
    with np.errstate(all="ignore"):
        results, new_state = kernel(ins, sts, attrs)
    problems = []
    got = [TensorType(np.shape(r), Dtype(np.asarray(r).dtype.name)) for r in results]
    if got != list(want):
        problems.append(f"results {[str(g) for g in got]}, shape rule says {[str(w) for w in want]}")
    got_state = [TensorType(np.shape(s), Dtype(np.asarray(s).dtype.name)) for s in new_state]
    if got_state != list(state):
        problems.append(f"new state {[str(g) for g in got_state]}, state is {[str(s) for s in state]}")
    for k, (a, b) in enumerate(zip(ins + sts, before, strict=True)):
        if a.tobytes() != b.tobytes():
            problems.append(f"argument {k} was written")
    return problems


def test_every_op_has_a_sample():
    assert missing(SAMPLES) == []


@pytest.mark.parametrize("kind", list(OpKind), ids=lambda k: k.value)
def test_kernel_agrees_with_shape_rule_and_is_pure(kind):
    assert kernel_problems(kind, KERNELS[kind]) == []


def _transposed(kernel: Kernel) -> Kernel:
    def wrong(ins, sts, attrs):
        results, new_state = kernel(ins, sts, attrs)
        return tuple(r.T for r in results), new_state

    return wrong


def _in_place_accumulate(ins, sts, attrs):
    (x,), (acc,) = ins, sts
    acc += x  # writes its argument: what a kernel must never do
    return (acc.copy(),), (acc,)


def _drops_state(kernel: Kernel) -> Kernel:
    def wrong(ins, sts, attrs):
        results, _ = kernel(ins, sts, attrs)
        return results, ()

    return wrong


@pytest.mark.parametrize(
    "kind, broken",
    [
        (OpKind.TRANSPOSE, _transposed(KERNELS[OpKind.TRANSPOSE])),
        (OpKind.ACCUMULATE, _in_place_accumulate),
        (OpKind.EMBEDDING_UPDATE, _drops_state(KERNELS[OpKind.EMBEDDING_UPDATE])),
    ],
    ids=["wrong shape", "writes its argument", "drops state"],
)
def test_kernel_check_catches_a_broken_kernel(kind, broken: Callable):
    assert kernel_problems(kind, broken) != []


def test_run_kernel_keeps_the_shape_rule_types_also_for_zero_dimensional_results():
    from refcompiler.kernels import run_kernel

    spec = OPS[OpKind.REDUCE_SUM]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    attrs = full_attrs(spec, {})  # all axes, no keepdims: a 0-d result
    (want,) = spec.shape_rule([t(2, 3)], [], attrs)
    (y,), _ = run_kernel(OpKind.REDUCE_SUM, [x], [], attrs)
    assert (y.shape, y.dtype) == (want.shape, np.float32) == ((), np.float32)
    assert y.flags.c_contiguous and float(y) == 15.0
