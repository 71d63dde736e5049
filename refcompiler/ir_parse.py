"""Parsing the canonical text form of a program (the form is described in
``refcompiler.ir_text``, which prints it): ``parse_program(text)`` gives the
program back, or a ``MalformedInput`` naming the line."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from specs import Dtype, OpKind, TensorType

from refcompiler.errors import MalformedInput
from refcompiler.graph import Init
from refcompiler.ir import Buffer, BufferKind, Instr, Opcode, Operand, OperandKind, Program, Save

__all__ = ["parse_program", "NAME", "KEYWORDS"]

# a plain name; any other is written as a JSON string
NAME = re.compile(r"%?[A-Za-z_][A-Za-z0-9_.\-]*(?::[0-9]+)?")
# words that follow a name on a line, so a name spelled like one is quoted
KEYWORDS = frozenset({"at", "owner", "init"})
_INT = re.compile(r"-?[0-9]+")
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
        m = NAME.match(self.line, self.pos)
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
