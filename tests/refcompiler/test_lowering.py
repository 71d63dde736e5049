"""Lowering: each node's instructions, operand kinds, views, copies, deallocs."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given

from specs import Dtype, OpKind, TensorType

from refcompiler.deps import dependency_graph
from refcompiler.driver import compile_graph, run_compiled
from refcompiler.errors import InvariantViolation
from refcompiler.graph import Graph, Node, Ref, Storage, StorageKind, freeze_attrs
from refcompiler.graph_json import load_graph
from refcompiler.ir import Buffer, BufferKind, Instr, Opcode, Operand, OperandKind, Save
from refcompiler.ir_verifier import verify_program
from refcompiler.lowering import StateLowering, lower, lower_state_operands
from refcompiler.reference import run_reference
from refcompiler.schedulers import SCHEDULERS
from refcompiler.values import same_bits
from refcompiler.variants import installed
from tests.refcompiler.local_graphs import graphs

ROOT = Path(__file__).resolve().parents[2]
F32 = Dtype.FLOAT32
IN, OUT, INOUT = OperandKind.IN, OperandKind.OUT, OperandKind.INOUT


def node(name: str, op: OpKind, *inputs: str, state: tuple[str, ...] = (), **attrs: object) -> Node:
    return Node(name, op, tuple(Ref.parse(x) for x in inputs), state, freeze_attrs(attrs))


def lowered(graph: Graph):  # type: ignore[no-untyped-def]
    return lower(graph, SCHEDULERS["topo"](graph, dependency_graph(graph), 0))


def test_lowers_each_kind_of_node() -> None:
    graph = Graph(
        "kinds",
        storage=(
            Storage("P", StorageKind.PLACEHOLDER, F32, (2, 2)),
            Storage("C", StorageKind.CONSTANT, F32, (2, 2)),
            Storage("acc", StorageKind.OWNED, F32, (4,), owner="running"),
            Storage("out", StorageKind.PLACEHOLDER, F32, (4,)),
        ),
        nodes=(
            node("pair", OpKind.ADD_SUB, "P", "C"),
            node("flat", OpKind.RESHAPE, "pair:1", shape=[4]),
            node("running", OpKind.ACCUMULATE, "flat", state=("acc",)),
            node("unused", OpKind.RELU, "pair:0"),
            node("s", OpKind.SAVE, "running", target="out"),
        ),
    )
    p = lower(graph, ["pair", "flat", "running", "unused", "s"])
    text = [(i.opcode, i.name, tuple((o.kind, o.name) for o in i.operands)) for i in p.instrs]
    assert text == [
        (Opcode.ALLOC, "%pair:0", ((OUT, "%pair:0"),)),
        (Opcode.ALLOC, "%pair:1", ((OUT, "%pair:1"),)),
        (Opcode.KERNEL, "pair", ((OUT, "%pair:0"), (OUT, "%pair:1"), (IN, "P"), (IN, "C"))),
        (Opcode.VIEW, "%flat", ((IN, "%pair:1"),)),
        (Opcode.ALLOC, "%running", ((OUT, "%running"),)),
        (Opcode.KERNEL, "running", ((OUT, "%running"), (IN, "%flat"), (INOUT, "acc"))),
        (Opcode.DEALLOC, "%pair:1", ((IN, "%pair:1"),)),  # its last use is through the view %flat
        (Opcode.ALLOC, "%unused", ((OUT, "%unused"),)),
        (Opcode.KERNEL, "unused", ((OUT, "%unused"), (IN, "%pair:0"))),
        (Opcode.DEALLOC, "%pair:0", ((IN, "%pair:0"),)),
        (Opcode.DEALLOC, "%unused", ((IN, "%unused"),)),  # never read: freed right after its kernel
        (Opcode.COPY, "s", ((OUT, "out"), (IN, "%running"))),
        (Opcode.DEALLOC, "%running", ((IN, "%running"),)),
    ]
    assert p.instrs[3].type == TensorType((4,), F32)
    assert p.instrs[0].type == TensorType((2, 2), F32)
    assert p.instrs[5].op is OpKind.ACCUMULATE
    assert p.buffers == (
        Buffer("P", BufferKind.PLACEHOLDER, TensorType((2, 2), F32)),
        Buffer("C", BufferKind.CONSTANT, TensorType((2, 2), F32)),
        Buffer("acc", BufferKind.OWNED, TensorType((4,), F32), owner="running"),
        Buffer("out", BufferKind.PLACEHOLDER, TensorType((4,), F32)),
    )
    assert p.saves == (Save("s", "out", "running"),)
    assert p.schedule == ("pair", "flat", "running", "unused", "s")
    verify_program(p)


def test_attributes_have_defaults_filled_in() -> None:
    graph = load_graph(ROOT / "examples" / "quantization_profile.json")
    (prof,) = [i for i in lowered(graph).instrs if i.name == "prof"]
    assert prof.attrs == (("lo", -2.0), ("hi", 2.0))
    assert prof.operands == (Operand(IN, "%sum"), Operand(INOUT, "minmax"), Operand(INOUT, "hist"))
    graph = load_graph(ROOT / "examples" / "sgd_momentum.json")
    (total,) = [i for i in lowered(graph).instrs if i.name == "total"]
    assert total.attr_dict() == {"axis": None, "keepdims": False}


def test_a_save_records_its_producer_through_views() -> None:
    graph = load_graph(ROOT / "examples" / "sgd_momentum.json")
    assert lowered(graph).saves == (
        Save("save_w", "w", "step"),
        Save("save_v", "v", "step"),
        Save("save_loss", "loss", "total"),  # through the view total1
    )


def test_a_save_of_a_placeholder_into_itself_lowers_to_nothing() -> None:
    graph = Graph(
        "self",
        storage=(Storage("P", StorageKind.PLACEHOLDER, F32, (4,)),),
        nodes=(node("v", OpKind.RESHAPE, "P", shape=[4]), node("s", OpKind.SAVE, "v", target="P")),
    )
    p = lowered(graph)
    assert [i.opcode for i in p.instrs] == [Opcode.VIEW]
    verify_program(p)


def test_every_owner_gets_its_state_inout() -> None:
    for path in ROOT.glob("examples/*.json"):
        graph = load_graph(path)
        p = lowered(graph)
        for n in graph.nodes:
            if n.state:
                (k,) = [i for i in p.instrs if i.opcode is Opcode.KERNEL and i.name == n.name]
                assert k.operands_of(INOUT) == tuple(Operand(INOUT, s) for s in n.state)


def test_lower_rejects_a_name_that_is_no_node() -> None:
    graph = load_graph(ROOT / "examples" / "read_then_save.json")
    with pytest.raises(InvariantViolation) as e:
        lower(graph, ["sum", "nope"])
    assert e.value.invariant == "SCH-1"


@given(graphs())
def test_lowered_random_graphs_verify(graph: Graph) -> None:
    verify_program(lowered(graph))


def no_writeback(node: Node, buffers, fresh) -> StateLowering:  # type: ignore[no-untyped-def]
    """A wrong state lowering: the kernel updates a fresh copy of its state, never written back."""
    before: list[Instr] = []
    operands = []
    for name in node.state:
        tmp = fresh(f"%{node.name}.{name}")
        before.append(Instr(Opcode.ALLOC, tmp, (Operand(OUT, tmp),), type=buffers[name].type))
        before.append(Instr(Opcode.COPY, node.name, (Operand(OUT, tmp), Operand(IN, name))))
        operands.append(Operand(INOUT, tmp))
    return StateLowering(operands=tuple(operands), before=tuple(before))


def test_a_state_lowering_without_writeback_is_caught() -> None:
    graph = load_graph(ROOT / "examples" / "quantization_profile.json")
    with installed({lower_state_operands: no_writeback}):
        p = lowered(graph)
    (k,) = [i for i in p.instrs if i.name == "prof" and i.opcode is Opcode.KERNEL]
    assert k.operands_of(INOUT) == (Operand(INOUT, "%prof.minmax"), Operand(INOUT, "%prof.hist"))
    # the temporaries are deallocated after their last use like any activation
    assert [i.name for i in p.instrs if i.opcode is Opcode.DEALLOC].count("%prof.hist") == 1
    # the copy out of owned state is not the owner's kernel: IR-5, statically ...
    with pytest.raises(InvariantViolation) as e:
        verify_program(p)
    assert e.value.invariant == "IR-5"
    # ... and the compiler refuses it
    with installed({lower_state_operands: no_writeback}), pytest.raises(InvariantViolation) as e:
        compile_graph(graph)
    assert e.value.invariant == "IR-5"


def test_correct_lowering_keeps_state_across_runs() -> None:
    graph = load_graph(ROOT / "examples" / "embedding_update.json")
    got, want = run_compiled(compile_graph(graph), runs=2), run_reference(graph, runs=2)
    assert same_bits(got["table"], want["table"]) and same_bits(got["acc"], want["acc"])


def test_one_lowering_for_many_orders_gives_what_lowering_each_alone_gives() -> None:
    from refcompiler.deps import dependency_graph
    from refcompiler.graph_json import load_graph
    from refcompiler.ir_text import print_program
    from refcompiler.lowering import Lowering
    from refcompiler.schedulers import SCHEDULERS
    from refcompiler.mutants import activate

    graph = load_graph(Path(__file__).resolve().parents[2] / "examples" / "embedding_update.json")
    deps = dependency_graph(graph)
    orders = {tuple(SCHEDULERS["random"](graph, deps, seed)) for seed in range(20)}
    assert len(orders) > 1
    for mutant in (None, "lower-state-no-writeback"):  # kept per node, and made anew per order
        with activate(mutant):
            shared = Lowering(graph)
            assert shared.reuse is (mutant is None)
            for order in sorted(orders):
                assert print_program(shared.lower(order)) == print_program(lower(graph, order))


def test_the_deallocs_of_one_lowering_are_shared_by_its_orders_and_equal_to_fresh_ones() -> None:
    from refcompiler.lowering import Lowering
    from refcompiler.mutants import activate

    graph = load_graph(Path(__file__).resolve().parents[2] / "examples" / "embedding_update.json")
    deps = dependency_graph(graph)
    orders = sorted({tuple(SCHEDULERS["random"](graph, deps, seed)) for seed in range(20)})
    for mutant in (None, "lower-state-no-writeback"):
        with activate(mutant):
            shared = Lowering(graph)
            seen: dict[str, Instr] = {}
            repeats = 0
            for order in orders:
                for instr in shared.lower(order).instrs:
                    if instr.opcode is Opcode.DEALLOC:
                        assert instr == Instr(Opcode.DEALLOC, instr.name, (Operand(OperandKind.IN, instr.name),))
                        if instr.name in seen:  # kept only where the names are not the order's own
                            assert (seen[instr.name] is instr) is shared.reuse
                            repeats += 1
                        seen[instr.name] = instr
            assert repeats and len(shared.deallocs) == (len(seen) if shared.reuse else 0)
