"""The IR text form: print then parse gives the same program; errors name the line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from specs import Dtype, OpKind, TensorType

from refcompiler.driver import compile_graph
from refcompiler.errors import MalformedInput
from refcompiler.graph import Graph, Init
from refcompiler.graph_json import load_graph
from refcompiler.ir import Buffer, BufferKind, Instr, Opcode, Operand, OperandKind, Program, Save
from refcompiler.ir_text import format_instr, parse_program, print_program
from tests.refcompiler.local_graphs import graphs

ROOT = Path(__file__).resolve().parents[2]
F32 = Dtype.FLOAT32
IN, OUT, INOUT = OperandKind.IN, OperandKind.OUT, OperandKind.INOUT

TEXT = """\
program "hand written"
schedule a flat s
peak_bytes 32
buffer P : placeholder float32[2, 2] init {"seed": 3}
buffer ids : placeholder int32[3] init {"seed": 1, "high": 4}
buffer K : constant float32[4] init {"value": [1.0, -2.5, 0.0, 3.0]}
buffer acc : owned float32[4] owner a
save s : P <- a
   0: alloc   %a : float32[4] at 16
   1: kernel  a = accumulate(@out %a, @in K, @inout acc)
   2: view    %flat : float32[2, 2] (@in %a)
   3: copy    s(@out P, @in %flat)
   4: dealloc %a
"""


def test_parses_a_hand_written_program() -> None:
    p = parse_program(TEXT)
    assert p == Program(
        name="hand written",
        buffers=(
            Buffer("P", BufferKind.PLACEHOLDER, TensorType((2, 2), F32), init=Init(seed=3)),
            Buffer("ids", BufferKind.PLACEHOLDER, TensorType((3,), Dtype.INT32), init=Init(seed=1, low=0, high=4)),
            Buffer("K", BufferKind.CONSTANT, TensorType((4,), F32), init=Init(value=(1.0, -2.5, 0.0, 3.0))),
            Buffer("acc", BufferKind.OWNED, TensorType((4,), F32), owner="a"),
        ),
        instrs=(
            Instr(Opcode.ALLOC, "%a", (Operand(OUT, "%a"),), type=TensorType((4,), F32)),
            Instr(Opcode.KERNEL, "a", (Operand(OUT, "%a"), Operand(IN, "K"), Operand(INOUT, "acc")), op=OpKind.ACCUMULATE),
            Instr(Opcode.VIEW, "%flat", (Operand(IN, "%a"),), type=TensorType((2, 2), F32)),
            Instr(Opcode.COPY, "s", (Operand(OUT, "P"), Operand(IN, "%flat"))),
            Instr(Opcode.DEALLOC, "%a", (Operand(IN, "%a"),)),
        ),
        schedule=("a", "flat", "s"),
        offsets=(("%a", 16),),
        peak_bytes=32,
        saves=(Save("s", "P", "a"),),
    )
    assert print_program(p) == TEXT


def test_round_trips_odd_programs() -> None:
    p = Program(
        name='quote " and newline \n',
        buffers=(Buffer("at", BufferKind.PLACEHOLDER, TensorType((), F32)),),
        instrs=(
            Instr(Opcode.ALLOC, "%weird name", (), type=TensorType((1,), F32)),  # no operands at all
            Instr(Opcode.DEALLOC, "%x", (Operand(OUT, "%y"),)),  # not the usual operand
            Instr(Opcode.KERNEL, "t", (Operand(OUT, "%x:1"),), op=OpKind.TRANSPOSE, attrs=(("perm", (1, 0)), ("z", None))),
            Instr(Opcode.KERNEL, "no_op", ()),
            Instr(Opcode.COPY, "c", ()),
        ),
        offsets=(("%weird name", 0), ("%orphan", 48)),
        passes=("share_buffers",),
        saves=(Save("s", "at"),),
    )
    text = print_program(p)
    assert parse_program(text) == p
    assert parse_program(text).passes == ("share_buffers",)


@pytest.mark.parametrize("path", sorted(ROOT.glob("examples/*.json")), ids=lambda p: p.name)
@pytest.mark.parametrize("pipeline", ["O0", "O2"])
def test_round_trips_compiled_examples(path: Path, pipeline: str) -> None:
    p = compile_graph(load_graph(path), pipeline=pipeline).program
    text = print_program(p)
    assert parse_program(text) == p
    assert print_program(parse_program(text)) == text


@given(graphs(), st.sampled_from(["O0", "O2"]), st.sampled_from(["topo", "memory", "random"]))
def test_round_trips_random_programs(graph: Graph, pipeline: str, scheduler: str) -> None:
    p = compile_graph(graph, pipeline=pipeline, scheduler=scheduler).program
    assert parse_program(print_program(p)) == p


def test_shows_operand_kinds_offsets_and_peak() -> None:
    text = print_program(compile_graph(load_graph(ROOT / "examples" / "embedding_update.json")).program)
    assert "@inout table" in text and "@inout acc" in text and "@out %emb" in text
    assert "peak_bytes " in text and " at 0" in text
    assert "buffer table : owned float32[6, 3] owner emb" in text


def test_format_instr() -> None:
    instr = Instr(Opcode.KERNEL, "y", (Operand(OUT, "%y"), Operand(IN, "x")), op=OpKind.RELU)
    assert format_instr(instr) == "kernel  y = relu(@out %y, @in x)"


@pytest.mark.parametrize(
    "text,line,needle",
    [
        ('buffer P : placeholder float32[4]\n', None, "missing the 'program"),
        ('program "p"\n  0: frobnicate %x\n', 2, "unknown opcode 'frobnicate'"),
        ('program "p"\n  0: alloc %x : float33[4]\n', 2, "unknown dtype"),
        ('program "p"\n  0: alloc %x : float32[4\n', 2, "expected ',' or ']'"),
        ('program "p"\n  0: kernel y = relu(@out %y, @in x) {"perm": [1,\n', 2, "expected a JSON object"),
        ('program "p"\n  3: dealloc %x\n', 2, "index 3 does not match its position 0"),
        ('program "p"\n  0: dealloc %x\nbuffer P : placeholder float32[4]\n', 3, "belongs to the header"),
        ('program "p"\n  0: copy s(@out P, @in %x) at 16\n', 2, "only an alloc has an arena offset"),
        ('program "p"\n  0: copy s(@sideways P)\n', 2, "unknown operand kind"),
        ('program "p"\nbuffer P : variable float32[4]\n', 2, "unknown buffer kind"),
        ('program "p"\nbuffer P : owned float32[4] init {"seed": 1, "colour": 2}\n', 2, "unknown field 'colour'"),
        ('program "p"\nprogram "q"\n', 2, "a second 'program' line"),
        ('program p\n', 1, "expected a JSON string"),
        ('program "p"\npeak_bytes lots\n', 2, "expected an integer"),
        ('program "p"\n  0: dealloc %x extra\n', 2, "unexpected"),
    ],
)
def test_parse_errors_name_the_line(text: str, line: int | None, needle: str) -> None:
    with pytest.raises(MalformedInput) as e:
        parse_program(text, path="bad.ir")
    message = str(e.value)
    assert message.startswith("bad.ir: " + (f"line {line}: " if line else ""))
    assert needle in message


def test_comments_and_blank_lines_are_ignored() -> None:
    text = "# a comment\n\n" + TEXT.replace("   2: view", "\n   # about the view\n   2: view")
    assert parse_program(text) == parse_program(TEXT)
