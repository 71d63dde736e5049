"""The one canonical text form of a program (DESIGN §5; STYLE: prints and parses back).

``parse_program(print_program(p)) == p`` for every program whose offsets are
in the order of their ``alloc``s (as ``refcompiler.allocator`` gives them).
The form, one item per line::

    program "sgd_momentum"
    schedule y err step save_w
    peak_bytes 96
    buffer x : placeholder float32[4, 3] init {"seed": 11}
    buffer table : owned float32[6, 3] owner emb init {"seed": 6}
    save save_w : w <- step
       0: alloc   %y : float32[4, 2] at 0
       1: kernel  y = matmul(@out %y, @in x, @in w)
       2: kernel  step = sgd_momentum(@out %step:0, @out %step:1, @in w, @in %g, @in v) {"lr": 0.05, "mu": 0.9}
       3: view    %flat : float32[8] (@in %y)
       4: copy    save_w(@out w, @in %step:0)
       5: dealloc %y

Header lines (``program``, ``schedule``, ``passes``, ``peak_bytes``,
``buffer``, ``save``, and ``offset NAME at N`` for an offset that belongs to
no ``alloc``) come before the instructions. An instruction is ``opcode name
[: type] [= op] [(operands)] [attributes as a JSON object] [at offset]``; the
``N:`` prefix is optional and, when given, must be the instruction's index.
``alloc`` and ``dealloc`` list no operands when they have the usual one (the
activation itself, ``@out`` / ``@in``). A name that is not a plain identifier
(``%``, letters, digits, ``_ . -``, an optional ``:k``) is written as a JSON
string. Blank lines and lines starting with ``#`` are ignored. A parse error
is a ``MalformedInput`` naming the line. Printing is here; parsing is
``refcompiler.ir_parse`` (``parse_program`` is re-exported here).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from specs import TensorType

from refcompiler.errors import InvariantViolation
from refcompiler.graph import Init
from refcompiler.ir import Buffer, Instr, Opcode, Operand, OperandKind, Program
from refcompiler.ir_parse import KEYWORDS, NAME, parse_program

__all__ = ["print_program", "parse_program", "format_instr", "context_lines", "ir_violation"]

_OPCODE_WIDTH = max(len(o.value) for o in Opcode)


# ---------------------------------------------------------------------------
# Printing


def print_program(p: Program) -> str:
    """The canonical text of ``p`` (ends with a newline)."""
    lines = [f"program {json.dumps(p.name)}"]
    if p.schedule:
        lines.append("schedule " + " ".join(_name(n) for n in p.schedule))
    if p.passes:
        lines.append("passes " + " ".join(_name(n) for n in p.passes))
    if p.peak_bytes is not None:
        lines.append(f"peak_bytes {p.peak_bytes}")
    lines.extend(_buffer_line(b) for b in p.buffers)
    for s in p.saves:
        producer = "" if s.producer is None else f" <- {_name(s.producer)}"
        lines.append(f"save {_name(s.node)} : {_name(s.target)}{producer}")
    allocs = {i.name for i in p.instrs if i.opcode is Opcode.ALLOC}
    offsets = dict(p.offsets)
    lines.extend(f"offset {_name(n)} at {off}" for n, off in p.offsets if n not in allocs)
    width = len(str(max(len(p.instrs) - 1, 0)))
    for index, instr in enumerate(p.instrs):
        offset = offsets.get(instr.name) if instr.opcode is Opcode.ALLOC else None
        lines.append(f"{index:>{width + 3}}: {format_instr(instr, offset)}")
    return "\n".join(lines) + "\n"


def format_instr(instr: Instr, offset: int | None = None) -> str:
    """One instruction in the canonical form (without the index prefix)."""
    text = f"{instr.opcode.value:<{_OPCODE_WIDTH}} {_name(instr.name)}"
    if instr.type is not None:
        text += f" : {_type(instr.type)}"
    if instr.op is not None:
        text += f" = {instr.op.value}"
    if not _implicit_operands(instr):
        operands = ", ".join(f"@{o.kind.value} {_name(o.name)}" for o in instr.operands)
        text += (" (" if instr.op is None and instr.type is not None else "(") + operands + ")"
    if instr.attrs:
        text += " " + json.dumps(dict(instr.attrs))
    if offset is not None:
        text += f" at {offset}"
    return text


def context_lines(p: Program, index: int, radius: int = 3) -> str:
    """Instructions ``index - radius .. index + radius``, the one at ``index`` marked ``>``."""
    offsets = dict(p.offsets)
    lo, hi = max(0, index - radius), min(len(p.instrs), index + radius + 1)
    width = len(str(max(hi - 1, 0)))
    out = []
    for i in range(lo, hi):
        instr = p.instrs[i]
        offset = offsets.get(instr.name) if instr.opcode is Opcode.ALLOC else None
        out.append(f"  {'>' if i == index else ' '} {i:>{width}}: {format_instr(instr, offset)}")
    return "\n".join(out)


def ir_violation(program: Program, index: int, invariant: str, message: str, *names: str) -> InvariantViolation:
    """The one way to report a fault at instruction ``index`` of ``program``: an
    ``InvariantViolation`` whose message quotes the instruction (on one line) and
    whose context shows the IR around it (``context_lines``)."""
    instr = program.instrs[index]
    text = f"instruction {index} `{' '.join(format_instr(instr).split())}`: {message}"
    return InvariantViolation(
        invariant, text, names=names, context=context_lines(program, index), instruction=index, instruction_name=instr.name
    )


def _implicit_operands(instr: Instr) -> bool:
    if instr.opcode is Opcode.ALLOC:
        return instr.operands == (Operand(OperandKind.OUT, instr.name),)
    if instr.opcode is Opcode.DEALLOC:
        return instr.operands == (Operand(OperandKind.IN, instr.name),)
    return False


def _name(name: str) -> str:
    return name if NAME.fullmatch(name) and name not in KEYWORDS else json.dumps(name)


def _type(t: TensorType) -> str:
    return f"{t.dtype.value}[{', '.join(str(d) for d in t.shape)}]"


def _buffer_line(b: Buffer) -> str:
    text = f"buffer {_name(b.name)} : {b.kind.value} {_type(b.type)}"
    if b.owner is not None:
        text += f" owner {_name(b.owner)}"
    if b.init is not None:
        text += f" init {json.dumps(_init_doc(b.init))}"
    return text


def _init_doc(init: Init) -> dict[str, Any]:
    """The fields of ``init`` that differ from their defaults."""
    doc: dict[str, Any] = {}
    for f in dataclasses.fields(Init):
        value = getattr(init, f.name)
        if value != f.default:
            doc[f.name] = list(value) if isinstance(value, tuple) else value
    return doc
