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
is a ``MalformedInput`` naming the line.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from specs import Dtype, OpKind, TensorType

from refcompiler.errors import InvariantViolation, MalformedInput
from refcompiler.graph import Init
from refcompiler.ir import Buffer, BufferKind, Instr, Opcode, Operand, OperandKind, Program, Save

__all__ = ["print_program", "parse_program", "format_instr", "context_lines", "ir_violation"]

_NAME = re.compile(r"%?[A-Za-z_][A-Za-z0-9_.\-]*(?::[0-9]+)?")
_INT = re.compile(r"-?[0-9]+")
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
    text = f"instruction {index} `{' '.join(format_instr(program.instrs[index]).split())}`: {message}"
    return InvariantViolation(invariant, text, names=names, context=context_lines(program, index))


def _implicit_operands(instr: Instr) -> bool:
    if instr.opcode is Opcode.ALLOC:
        return instr.operands == (Operand(OperandKind.OUT, instr.name),)
    if instr.opcode is Opcode.DEALLOC:
        return instr.operands == (Operand(OperandKind.IN, instr.name),)
    return False


def _name(name: str) -> str:
    return name if _NAME.fullmatch(name) and name not in _KEYWORDS else json.dumps(name)


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


# ---------------------------------------------------------------------------
# Parsing

_KEYWORDS = frozenset({"at", "owner", "init"})
_HEADER = ("program", "schedule", "passes", "peak_bytes", "buffer", "save", "offset")


def parse_program(text: str, *, path: str | None = None) -> Program:
    """The program ``text`` describes; ``MalformedInput`` naming the line otherwise."""
    name: str | None = None
    schedule: tuple[str, ...] = ()
    passes: tuple[str, ...] = ()
    peak: int | None = None
    buffers: list[Buffer] = []
    saves: list[Save] = []
    extra_offsets: list[tuple[str, int]] = []
    instrs: list[Instr] = []
    alloc_offsets: list[tuple[str, int]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        s = _Scanner(line, path, number)
        word = s.peek_word()
        if word in _HEADER:
            if instrs:
                raise s.fail(f"'{word}' belongs to the header, before the first instruction")
            s.word()
            if word == "program":
                if name is not None:
                    raise s.fail("a second 'program' line")
                name = s.json_value(str, "a JSON string")
            elif word == "schedule":
                schedule = tuple(s.names_to_end())
            elif word == "passes":
                passes = tuple(s.names_to_end())
            elif word == "peak_bytes":
                peak = s.integer()
            elif word == "buffer":
                buffers.append(_parse_buffer(s))
            elif word == "save":
                saves.append(_parse_save(s))
            else:
                extra_offsets.append(_parse_offset(s))
        else:
            instr, offset = _parse_instr(s, len(instrs))
            instrs.append(instr)
            if offset is not None:
                alloc_offsets.append((instr.name, offset))
        s.end()
    if name is None:
        raise MalformedInput("missing the 'program \"NAME\"' line", path=path)
    return Program(
        name=name,
        buffers=tuple(buffers),
        instrs=tuple(instrs),
        schedule=schedule,
        offsets=tuple(alloc_offsets + extra_offsets),
        peak_bytes=peak,
        passes=passes,
        saves=tuple(saves),
    )


def _parse_buffer(s: "_Scanner") -> Buffer:
    name = s.name()
    s.expect(":")
    kind = s.enum(BufferKind, "buffer kind")
    t = s.type()
    owner = init = None
    if s.at_word("owner"):
        s.word()
        owner = s.name()
    if s.at_word("init"):
        s.word()
        init = _init_from(s, s.json_value(dict, "a JSON object"))
    return Buffer(name=name, kind=kind, type=t, owner=owner, init=init)


def _init_from(s: "_Scanner", doc: dict[str, Any]) -> Init:
    known = {f.name for f in dataclasses.fields(Init)}
    unknown = sorted(set(doc) - known)
    if unknown:
        raise s.fail(f"init has unknown field '{unknown[0]}' (known: {', '.join(sorted(known))})")
    fields = dict(doc)
    if "value" in fields:
        value = fields["value"]
        if not isinstance(value, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
            raise s.fail("init 'value' must be a flat list of numbers")
        fields["value"] = tuple(value)
    for key in ("seed", "low", "high"):
        if key in fields and (not isinstance(fields[key], int) or isinstance(fields[key], bool)):
            raise s.fail(f"init '{key}' must be an integer")
    return Init(**fields)


def _parse_save(s: "_Scanner") -> Save:
    node = s.name()
    s.expect(":")
    target = s.name()
    producer = None
    if s.try_expect("<-"):
        producer = s.name()
    return Save(node=node, target=target, producer=producer)


def _parse_offset(s: "_Scanner") -> tuple[str, int]:
    name = s.name()
    s.expect_word("at")
    return name, s.integer()


def _parse_instr(s: "_Scanner", index: int) -> tuple[Instr, int | None]:
    if s.peek_int():
        given = s.integer()
        s.expect(":")
        if given != index:
            raise s.fail(f"instruction index {given} does not match its position {index}")
    opcode = s.enum(Opcode, "opcode")
    name = s.name()
    t = op = None
    if s.try_expect(":"):
        t = s.type()
    if s.try_expect("="):
        op = s.enum(OpKind, "op")
    if s.try_expect("("):
        operands = _parse_operands(s)
    elif opcode is Opcode.ALLOC:
        operands = (Operand(OperandKind.OUT, name),)
    elif opcode is Opcode.DEALLOC:
        operands = (Operand(OperandKind.IN, name),)
    else:
        operands = ()
    attrs: tuple[tuple[str, object], ...] = ()
    if s.peek_char() == "{":
        attrs = tuple((k, _freeze(v)) for k, v in s.json_value(dict, "a JSON object of attributes").items())
    offset = None
    if s.at_word("at"):
        s.word()
        offset = s.integer()
        if opcode is not Opcode.ALLOC:
            raise s.fail("only an alloc has an arena offset ('at N')")
    return Instr(opcode=opcode, name=name, operands=operands, op=op, attrs=attrs, type=t), offset


def _parse_operands(s: "_Scanner") -> tuple[Operand, ...]:
    operands: list[Operand] = []
    if s.try_expect(")"):
        return ()
    while True:
        s.expect("@")
        kind = s.enum(OperandKind, "operand kind (in, out, inout)")
        operands.append(Operand(kind, s.name()))
        if s.try_expect(")"):
            return tuple(operands)
        s.expect(",")


def _freeze(v: object) -> object:
    return tuple(_freeze(x) for x in v) if isinstance(v, list) else v


class _Scanner:
    """A cursor over one line; every failure names the file, the line and the column."""

    def __init__(self, line: str, path: str | None, number: int):
        self.line = line
        self.pos = 0
        self.path = path
        self.number = number

    def fail(self, message: str) -> MalformedInput:
        return MalformedInput(f"{message} (column {self.pos + 1}: {self.line.strip()!r})", path=self.path, field=f"line {self.number}")

    def skip(self) -> None:
        while self.pos < len(self.line) and self.line[self.pos].isspace():
            self.pos += 1

    def peek_char(self) -> str:
        self.skip()
        return self.line[self.pos] if self.pos < len(self.line) else ""

    def peek_word(self) -> str:
        self.skip()
        m = _NAME.match(self.line, self.pos)
        return m.group(0) if m else ""

    def peek_int(self) -> bool:
        self.skip()
        return bool(_INT.match(self.line, self.pos))

    def at_word(self, word: str) -> bool:
        return self.peek_word() == word

    def word(self) -> str:
        w = self.peek_word()
        if not w:
            raise self.fail("expected a word")
        self.pos += len(w)
        return w

    def expect_word(self, word: str) -> None:
        if self.peek_word() != word:
            raise self.fail(f"expected '{word}'")
        self.pos += len(word)

    def try_expect(self, literal: str) -> bool:
        self.skip()
        if self.line.startswith(literal, self.pos):
            self.pos += len(literal)
            return True
        return False

    def expect(self, literal: str) -> None:
        if not self.try_expect(literal):
            found = self.line[self.pos:self.pos + 10] or "the end of the line"
            raise self.fail(f"expected '{literal}', found {found!r}")

    def end(self) -> None:
        self.skip()
        if self.pos != len(self.line):
            raise self.fail(f"unexpected {self.line[self.pos:]!r}")

    def name(self) -> str:
        if self.peek_char() == '"':
            return self.json_value(str, "a name")
        w = self.peek_word()
        if not w:
            raise self.fail("expected a name")
        self.pos += len(w)
        return w

    def names_to_end(self) -> list[str]:
        out = []
        while self.peek_char():
            out.append(self.name())
        return out

    def integer(self) -> int:
        self.skip()
        m = _INT.match(self.line, self.pos)
        if not m:
            raise self.fail("expected an integer")
        self.pos = m.end()
        return int(m.group(0))

    def enum(self, enum_type: Any, what: str) -> Any:
        start = self.pos
        w = self.word()
        try:
            return enum_type(w)
        except ValueError:
            self.pos = start
            known = ", ".join(e.value for e in enum_type)
            raise self.fail(f"unknown {what} {w!r} (known: {known})") from None

    def type(self) -> TensorType:
        dtype = self.enum(Dtype, "dtype")
        self.expect("[")
        dims: list[int] = []
        if not self.try_expect("]"):
            while True:
                dims.append(self.integer())
                if self.try_expect("]"):
                    break
                if not self.try_expect(","):
                    raise self.fail("expected ',' or ']' in a shape")
        return TensorType(tuple(dims), dtype)

    def json_value(self, want: type, what: str) -> Any:
        self.skip()
        try:
            value, end = json.JSONDecoder().raw_decode(self.line, self.pos)
        except json.JSONDecodeError as e:
            raise self.fail(f"expected {what} ({e.msg})") from None
        if not isinstance(value, want):
            raise self.fail(f"expected {what}")
        self.pos = end
        return value
