"""share_buffers: where it applies, where each legality rule forbids it, and
that every swap point is consulted (a wrong variant changes the outcome)."""

from __future__ import annotations

from specs import OpKind

from refcompiler.ir import Program
from refcompiler.ir_verifier import program_violations, verify_program
from refcompiler.passes.share_buffers import allowed_inputs, aliases, may_reuse, read_later, share_buffers
from refcompiler.variants import installed
from tests.refcompiler.passes.ir_build import (
    verified,
    operands,
    F4,
    F22,
    alloc,
    const,
    copy,
    dealloc,
    kernel,
    opcodes_and_names,
    owned,
    placeholder,
    program,
    save,
    view,
)

BUFFERS = [placeholder("A"), placeholder("B"), const("W"), owned("S", "acc")]


def shared(p: Program) -> Program:
    return verified(share_buffers, p)


def chain() -> Program:
    """%a = neg(A); %r = relu(%a); save %r -> B."""
    return program(
        BUFFERS,
        alloc("%a"),
        kernel("a", OpKind.NEG, ("%a",), ("A",)),
        alloc("%r"),
        kernel("r", OpKind.RELU, ("%r",), ("%a",)),
        dealloc("%a"),
        copy("save", "B", "%r"),
        dealloc("%r"),
        saves=(save("save", "B", "r"),),
    )


def test_result_takes_over_a_dead_input():
    out = shared(chain())
    assert operands(out, "r") == ["%a", "%a"]
    assert opcodes_and_names(out) == [
        ("alloc", "%a"),
        ("kernel", "a"),
        ("kernel", "r"),
        ("copy", "save"),
        ("dealloc", "%a"),  # moved to where %r's dealloc was: after the last use of either name
    ]


def test_no_sharing_when_the_input_is_read_later():
    p = chain()
    instrs = list(p.instrs)
    instrs[5:5] = [alloc("%late"), kernel("late", OpKind.NEG, ("%late",), ("%a",)), dealloc("%late")]
    instrs.remove(instrs[4])  # %a's dealloc moves after the late read
    instrs.insert(7, dealloc("%a"))
    p = p.with_instrs(instrs)
    out = shared(p)
    assert operands(out, "r") == ["%r", "%a"]
    assert operands(out, "late") == ["%a", "%a"]  # the last reader may take it over


def test_no_sharing_when_a_view_of_the_input_is_read_later():
    p = program(
        BUFFERS,
        alloc("%a"),
        kernel("a", OpKind.NEG, ("%a",), ("A",)),
        view("v", "%a", F22),
        alloc("%r"),
        kernel("r", OpKind.RELU, ("%r",), ("%a",)),
        alloc("%late", F22),
        kernel("late", OpKind.NEG, ("%late",), ("v",)),
        dealloc("%a"),
        dealloc("%late"),
        copy("save", "B", "%r"),
        dealloc("%r"),
        saves=(save("save", "B", "r"),),
    )
    out = shared(p)
    assert operands(out, "r") == ["%r", "%a"]
    # the mutant share-ignore-views: aliases that see no views
    with installed({aliases: lambda program, name: frozenset({name})}):
        wrong = share_buffers(p)
    assert operands(wrong, "r") == ["%a", "%a"]


def test_input_through_a_view_whose_origin_is_read_later():
    # %a (f32[2,2]) written, viewed as v (f32[4]), r = relu(v), %a read later
    p = program(
        [placeholder("A", F22), placeholder("B")],
        alloc("%a", F22),
        kernel("a", OpKind.NEG, ("%a",), ("A",)),
        view("v", "%a", F4),
        alloc("%r"),
        kernel("r", OpKind.RELU, ("%r",), ("v",)),
        alloc("%late", F22),
        kernel("late", OpKind.NEG, ("%late",), ("%a",)),
        dealloc("%a"),
        dealloc("%late"),
        copy("save", "B", "%r"),
        dealloc("%r"),
        saves=(save("save", "B", "r"),),
    )
    assert operands(shared(p), "r") == ["%r", "v"]


def test_sharing_into_a_view_renames_the_result_to_the_view():
    p = program(
        [placeholder("A", F22), placeholder("B")],
        alloc("%a", F22),
        kernel("a", OpKind.NEG, ("%a",), ("A",)),
        view("v", "%a", F4),
        alloc("%r"),
        kernel("r", OpKind.RELU, ("%r",), ("v",)),
        dealloc("%a"),
        copy("save", "B", "%r"),
        dealloc("%r"),
        saves=(save("save", "B", "r"),),
    )
    out = shared(p)
    assert operands(out, "r") == ["v", "v"]
    assert operands(out, "save") == ["B", "v"]


def test_never_a_module_buffer():
    for source in ("A", "W"):
        p = program(
            BUFFERS,
            alloc("%r"),
            kernel("r", OpKind.RELU, ("%r",), (source,)),
            copy("save", "B", "%r"),
            dealloc("%r"),
            saves=(save("save", "B", "r"),),
        )
        assert shared(p) == p


def test_share_into_placeholder_variant_is_consulted():
    # A is read by r only, and saved by nobody: the wrong variant writes A anyway
    p = program(
        BUFFERS,
        alloc("%r"),
        kernel("r", OpKind.RELU, ("%r",), ("A",)),
        copy("save", "B", "%r"),
        dealloc("%r"),
        saves=(save("save", "B", "r"),),
    )
    with installed({may_reuse: lambda program, name: name not in ("W", "S")}):
        wrong = share_buffers(p)
    assert operands(wrong, "r") == ["A", "A"]
    assert {v.invariant for v in program_violations(wrong)} == {"IR-4"}


def test_never_owned_state():
    p = program(
        BUFFERS,
        alloc("%t"),
        kernel("acc", OpKind.ACCUMULATE, ("%t",), ("A",), ("S",)),
        copy("save", "B", "%t"),
        dealloc("%t"),
        saves=(save("save", "B", "acc"),),
    )
    assert shared(p) == p


def test_in_place_list_per_result():
    # add_sub: s may overwrite nothing, d either input
    p = program(
        BUFFERS,
        alloc("%a"),
        kernel("a", OpKind.NEG, ("%a",), ("A",)),
        alloc("%b"),
        kernel("b", OpKind.NEG, ("%b",), ("W",)),
        alloc("%s"),
        alloc("%d"),
        kernel("x", OpKind.ADD_SUB, ("%s", "%d"), ("%a", "%b")),
        dealloc("%a"),
        dealloc("%b"),
        alloc("%y"),
        kernel("y", OpKind.MUL, ("%y",), ("%s", "%d")),
        dealloc("%s"),
        dealloc("%d"),
        copy("save", "B", "%y"),
        dealloc("%y"),
        saves=(save("save", "B", "y"),),
    )
    out = shared(p)
    assert operands(out, "x") == ["%s", "%a", "%a", "%b"]  # d took a; s kept its own
    # the mutant share-any-input: every input allowed for every result
    with installed({allowed_inputs: lambda instr, k: (0, 1)}):
        wrong = share_buffers(p)
    assert operands(wrong, "x") == ["%a", "%b", "%a", "%b"]
    assert "IR-6" in [v.invariant for v in program_violations(wrong)]


def test_no_stencil_or_transpose_in_place():
    for op in (OpKind.ROLL, OpKind.TRANSPOSE):
        p = program(
            BUFFERS,
            alloc("%a"),
            kernel("a", OpKind.NEG, ("%a",), ("A",)),
            alloc("%r"),
            kernel("r", op, ("%r",), ("%a",)),
            dealloc("%a"),
            copy("save", "B", "%r"),
            dealloc("%r"),
            saves=(save("save", "B", "r"),),
        )
        assert shared(p) == p


def test_types_must_match():
    # broadcasting add: y is f32[4], %c is f32[1]: not shareable; %a is
    from specs import Dtype, TensorType

    f1 = TensorType((1,), Dtype.FLOAT32)
    p = program(
        [*BUFFERS, placeholder("C", f1)],
        alloc("%c", f1),
        kernel("c", OpKind.NEG, ("%c",), ("C",)),
        alloc("%y"),
        kernel("y", OpKind.ADD, ("%y",), ("A", "%c")),
        dealloc("%c"),
        copy("save", "B", "%y"),
        dealloc("%y"),
        saves=(save("save", "B", "y"),),
    )
    assert shared(p) == p


def test_every_input_on_the_buffer_must_have_the_result_type():
    # add(%a, %v) with %v a [1, 4] view of %a ([4]): y is [1, 4] like %v, but
    # taking %v's buffer would also overwrite %a, an input not of y's shape (IR-6)
    from specs import Dtype, TensorType

    f14 = TensorType((1, 4), Dtype.FLOAT32)
    p = program(
        [*BUFFERS, placeholder("C", f14)],
        alloc("%a"),
        kernel("a", OpKind.NEG, ("%a",), ("A",)),
        view("%v", "%a", f14),
        alloc("%y", f14),
        kernel("y", OpKind.ADD, ("%y",), ("%a", "%v")),
        dealloc("%a"),
        copy("save", "C", "%y"),
        dealloc("%y"),
        saves=(save("save", "C", "y"),),
    )
    assert shared(p) == p


def test_input_used_twice_in_allowed_positions():
    p = program(
        BUFFERS,
        alloc("%a"),
        kernel("a", OpKind.NEG, ("%a",), ("A",)),
        alloc("%y"),
        kernel("y", OpKind.MUL, ("%y",), ("%a", "%a")),
        dealloc("%a"),
        copy("save", "B", "%y"),
        dealloc("%y"),
        saves=(save("save", "B", "y"),),
    )
    assert operands(shared(p), "y") == ["%a", "%a", "%a"]


def test_input_used_twice_in_a_position_not_allowed():
    # sgd_momentum: w_new may overwrite w but %a is also v; v_new may overwrite v but %a is also w
    p = program(
        BUFFERS,
        alloc("%a"),
        kernel("a", OpKind.NEG, ("%a",), ("A",)),
        alloc("%g"),
        kernel("g", OpKind.NEG, ("%g",), ("W",)),
        alloc("%w"),
        alloc("%v"),
        kernel("x", OpKind.SGD_MOMENTUM, ("%w", "%v"), ("%a", "%g", "%a")),
        dealloc("%a"),
        dealloc("%g"),
        alloc("%y"),
        kernel("y", OpKind.ADD, ("%y",), ("%w", "W")),
        dealloc("%w"),
        dealloc("%v"),
        copy("save", "B", "%y"),
        dealloc("%y"),
        saves=(save("save", "B", "y"),),
    )
    out = shared(p)
    assert operands(out, "x") == ["%w", "%v", "%a", "%g", "%a"]
    assert operands(out, "y") == ["%w", "%w", "W"]  # the later add does share


def test_never_two_results_on_one_buffer():
    # with every input allowed, add_sub's s takes %a; d may then not take %a as well
    p = program(
        BUFFERS,
        alloc("%a"),
        kernel("a", OpKind.NEG, ("%a",), ("A",)),
        alloc("%s"),
        alloc("%d"),
        kernel("x", OpKind.ADD_SUB, ("%s", "%d"), ("%a", "W")),
        dealloc("%a"),
        alloc("%y"),
        kernel("y", OpKind.MUL, ("%y",), ("%s", "%d")),
        dealloc("%s"),
        dealloc("%d"),
        copy("save", "B", "%y"),
        dealloc("%y"),
        saves=(save("save", "B", "y"),),
    )
    with installed({allowed_inputs: lambda instr, k: (0, 1)}):
        out = share_buffers(p)
    assert operands(out, "x") == ["%a", "%d", "%a", "W"]


def test_read_later_variant_is_consulted():
    p = program(
        BUFFERS,
        alloc("%a"),
        kernel("a", OpKind.NEG, ("%a",), ("A",)),
        alloc("%r"),
        kernel("r", OpKind.RELU, ("%r",), ("%a",)),
        alloc("%late"),
        kernel("late", OpKind.ADD, ("%late",), ("%a", "%r")),
        dealloc("%a"),
        dealloc("%r"),
        copy("save", "B", "%late"),
        dealloc("%late"),
        saves=(save("save", "B", "late"),),
    )
    assert operands(shared(p), "r") == ["%r", "%a"]
    # the mutant share-ignore-later-reads
    with installed({read_later: lambda program, index, name: False}):
        wrong = share_buffers(p)
    assert operands(wrong, "r") == ["%a", "%a"]
    verify_program(wrong)  # statically fine: only running it shows late reads relu(a), not a


def test_chain_of_in_place_candidates_and_deallocs():
    p = program(
        BUFFERS,
        alloc("%a"),
        kernel("a", OpKind.NEG, ("%a",), ("A",)),
        alloc("%b"),
        kernel("b", OpKind.RELU, ("%b",), ("%a",)),
        dealloc("%a"),
        alloc("%c"),
        kernel("c", OpKind.EXP, ("%c",), ("%b",)),
        dealloc("%b"),
        copy("save", "B", "%c"),
        dealloc("%c"),
        saves=(save("save", "B", "c"),),
    )
    out = shared(p)
    assert opcodes_and_names(out) == [
        ("alloc", "%a"),
        ("kernel", "a"),
        ("kernel", "b"),
        ("kernel", "c"),
        ("copy", "save"),
        ("dealloc", "%a"),
    ]
    assert operands(out, "c") == ["%a", "%a"]


def test_a_result_already_shared_is_not_shared_again():
    # a = neg(A); b = a + a; c = b + a: c takes b's buffer; a second run must not
    # then move b (written before c) onto a, which c still reads
    p = program(
        BUFFERS,
        alloc("%a"),
        kernel("a", OpKind.NEG, ("%a",), ("A",)),
        alloc("%b"),
        kernel("b", OpKind.ADD, ("%b",), ("%a", "%a")),
        alloc("%c"),
        kernel("c", OpKind.ADD, ("%c",), ("%b", "%a")),
        dealloc("%a"),
        dealloc("%b"),
        copy("save", "B", "%c"),
        dealloc("%c"),
        saves=(save("save", "B", "c"),),
    )
    once = shared(p)
    assert operands(once, "c") == ["%b", "%b", "%a"]
    assert shared(once) == once


def test_a_later_read_through_a_reshape_keeps_the_input_alive_end_to_end():
    # x = neg(A); v = reshape(x); y = relu(x); z = exp(v): y may not overwrite x
    from refcompiler.driver import compile_graph, run_compiled
    from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind
    from refcompiler.reference import run_reference
    from refcompiler.values import same_bits
    from specs import Dtype

    def storage(name: str, shape: tuple[int, ...], seed: int | None = None) -> Storage:
        init = Init(seed=seed) if seed is not None else None
        return Storage(name, StorageKind.PLACEHOLDER, Dtype.FLOAT32, shape, init=init)

    graph = Graph(
        "view_read_later",
        (storage("A", (4,), seed=1), storage("B", (4,)), storage("C", (2, 2))),
        (
            Node("x", OpKind.NEG, (Ref("A"),)),
            Node("v", OpKind.RESHAPE, (Ref("x"),), attrs=(("shape", (2, 2)),)),
            Node("y", OpKind.RELU, (Ref("x"),)),
            Node("z", OpKind.EXP, (Ref("v"),)),
            Node("save_y", OpKind.SAVE, (Ref("y"),), attrs=(("target", "B"),)),
            Node("save_z", OpKind.SAVE, (Ref("z"),), attrs=(("target", "C"),)),
        ),
    )
    expected = run_reference(graph)
    order = ["x", "v", "y", "z", "save_y", "save_z"]

    def differs(compiled) -> list[str]:
        got = run_compiled(compiled)
        return [name for name in expected if not same_bits(got[name], expected[name])]

    assert differs(compile_graph(graph, schedule=order, pipeline="share_buffers")) == []
    with installed({aliases: lambda program, name: frozenset({name})}):
        wrong = compile_graph(graph, schedule=order, pipeline="share_buffers")
    assert "C" in differs(wrong)  # z read relu(x) where it meant x
