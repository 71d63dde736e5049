"""Spec completeness: every op has every meaning, and the meanings agree.

Every ``OpKind`` must have a spec in ``specs.OPS`` with a shape rule, a kernel
in ``refcompiler.kernels.KERNELS`` and a printer entry in
``refcompiler.printer.OP_SYMBOLS``, a generator recipe in
``fuzz.strategies.BUILDERS``, and a lowering: on its sample instance every op
lowers to the instruction its spec says (a ``view``, a save ``copy``, or a
``kernel`` with its results ``@out``, inputs ``@in`` and state ``@inout``) and
the compiled program computes what the reference does. Each check goes through a helper that is also
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

from fuzz.strategies import BUILDERS

F32, I32 = Dtype.FLOAT32, Dtype.INT32

# Every table that must hold an entry for every op.
MEANINGS: dict[str, Mapping[OpKind, object]] = {
    "spec (specs.OPS)": OPS,
    "kernel (refcompiler.kernels.KERNELS)": KERNELS,
    "printer entry (refcompiler.printer.OP_SYMBOLS)": OP_SYMBOLS,
    "generator (fuzz.strategies.BUILDERS)": BUILDERS,
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


# ------------------------------------------------------------ lowering


def sample_graph(kind: OpKind):  # type: ignore[no-untyped-def]
    """``kind``'s sample as a graph: inputs from placeholders, state owned by the
    node, every result saved (so that nothing is dead)."""
    from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind, freeze_attrs

    inputs, state, given = SAMPLES[kind]
    storage = [
        Storage(f"in{k}", StorageKind.PLACEHOLDER, tt.dtype, tt.shape or (1,), Init(seed=k, low=0, high=2) if tt.dtype is I32 else Init(seed=k))
        for k, tt in enumerate(inputs)
    ]
    storage += [Storage(f"st{k}", StorageKind.OWNED, tt.dtype, tt.shape, Init(seed=10 + k), owner="n") for k, tt in enumerate(state)]
    if kind is OpKind.SAVE:
        storage.append(Storage("P", StorageKind.PLACEHOLDER, inputs[0].dtype, inputs[0].shape))
    node = Node("n", kind, tuple(Ref(f"in{k}") for k in range(len(inputs))), tuple(f"st{k}" for k in range(len(state))), freeze_attrs(dict(given)))
    nodes = [node]
    results = OPS[kind].shape_rule(inputs, state, full_attrs(OPS[kind], given))
    for k, tt in enumerate(results):
        name = f"out{k}"
        storage.append(Storage(name, StorageKind.PLACEHOLDER, tt.dtype, tt.shape))
        nodes.append(Node(f"save{k}", OpKind.SAVE, (Ref("n", k if len(results) > 1 else None),), attrs=freeze_attrs({"target": name})))
    return Graph(name=kind.value, storage=tuple(storage), nodes=tuple(nodes))


def lowering_problems(kind: OpKind, program) -> list[str]:  # type: ignore[no-untyped-def]
    """How the instruction of node ``n`` departs from what ``kind``'s spec says."""
    from refcompiler.ir import Opcode, OperandKind

    spec = OPS[kind]
    mine = [i for i in program.instrs if i.name in ("n", "%n") and i.opcode is not Opcode.ALLOC and i.opcode is not Opcode.DEALLOC]
    if len(mine) != 1:
        return [f"node n lowers to {len(mine)} instructions"]
    (instr,) = mine
    want = Opcode.VIEW if spec.view else Opcode.COPY if kind is OpKind.SAVE else Opcode.KERNEL
    if instr.opcode is not want:
        return [f"lowers to {instr.opcode.value}, not {want.value}"]
    if want is Opcode.KERNEL:
        kinds = [o.kind for o in instr.operands]
        n_in = len(SAMPLES[kind][0])
        expected = [OperandKind.OUT] * len(spec.results) + [OperandKind.IN] * n_in + [OperandKind.INOUT] * len(spec.state)
        if kinds != expected or instr.op is not kind:
            return [f"operands {[k.value for k in kinds]}, spec says {[k.value for k in expected]}"]
    return []


@pytest.mark.parametrize("kind", list(OpKind), ids=lambda k: k.value)
def test_every_op_lowers_as_its_spec_says_and_runs_like_the_reference(kind):
    from refcompiler.driver import compile_graph, run_compiled
    from refcompiler.lowering import lower
    from refcompiler.reference import run_reference
    from refcompiler.values import same_bits

    graph = sample_graph(kind)
    order = [n.name for n in graph.nodes]
    assert lowering_problems(kind, lower(graph, order)) == []
    want = run_reference(graph, runs=2)
    for pipeline in ("O0", "O2"):
        got = run_compiled(compile_graph(graph, pipeline=pipeline), runs=2)
        assert all(same_bits(got[k], want[k]) for k in want), pipeline


def test_lowering_check_catches_a_wrong_lowering():
    from dataclasses import replace

    from refcompiler.ir import Opcode, Operand, OperandKind
    from refcompiler.lowering import lower

    graph = sample_graph(OpKind.ACCUMULATE)
    program = lower(graph, [n.name for n in graph.nodes])
    # the state passed @in: the owner could not write it back
    wrong = tuple(
        replace(i, operands=tuple(Operand(OperandKind.IN, o.name) if o.kind is OperandKind.INOUT else o for o in i.operands))
        if i.opcode is Opcode.KERNEL
        else i
        for i in program.instrs
    )
    assert lowering_problems(OpKind.ACCUMULATE, program.with_instrs(wrong)) != []


def test_uniform_dtypes_pick_every_inputs_dtype_from_the_first():
    spec = OPS[OpKind.MAX]
    assert spec.uniform_dtypes == (I32,)
    assert [spec.input_dtype(k, I32) for k in range(2)] == [I32, I32]
    assert [spec.input_dtype(k, F32) for k in range(2)] == [F32, F32]
    assert [spec.input_dtype(k) for k in range(2)] == [F32, F32]
    # no other op of the table takes int32 on every input
    assert [k for k in OpKind if OPS[k].uniform_dtypes] == [OpKind.MAX]
    assert OPS[OpKind.ADD].input_dtype(1, I32) is F32


def test_the_kinds_hot_tables_are_keyed_by_hash_as_objects_and_stay_enums():
    """The op table's and the IR's kinds are ``FastEnum``s: Enum's own ``__hash__`` is a
    Python-level call; theirs is object's, which agrees with their equality (identity)."""
    from specs import FastEnum
    from refcompiler.graph import StorageKind
    from refcompiler.ir import BufferKind, Opcode, OperandKind
    from refcompiler.symbolic.terms import Sort

    for kind in (Dtype, OpKind, AttrKind, StorageKind, BufferKind, Opcode, OperandKind, Sort):
        assert issubclass(kind, FastEnum) and kind.__hash__ is object.__hash__, kind
        assert all(hash(m) == object.__hash__(m) and kind(m.value) is m for m in kind)
