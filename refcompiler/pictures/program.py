"""A compiled program (the low-level IR) as a Graphviz dataflow picture.

Each ``kernel`` and ``copy`` is a box numbered by its instruction index. Memory
is drawn as *values*: every write to a buffer makes a new vertex for that
buffer's content (an activation's first value, a placeholder at entry and
after its save, owned state before and after its owner), so the drawing has no
cycles even where a result overwrites its input in place. Edges carry the
operand kind and position (``@in 1``, ``@out 0``, ``@inout 2``) and name the
view an operand goes through. An activation that holds more than one value
over the program (a buffer ``share_buffers`` reused) is drawn hatched
yellow on every value it holds, with the values listed; its arena offset and
size are on every vertex.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field

from refcompiler.allocator import ALIGN
from refcompiler.ir import BufferKind, Instr, Opcode, OperandKind, Program
from refcompiler.ir_analysis import Analysis, activations, analyze, is_data, name_types
from refcompiler.pictures.dot import Dot, Html
from refcompiler.errors import InvariantViolation
from refcompiler.pictures.graph import ERROR, Style

__all__ = ["program_dot", "shared_buffers", "aligned_bytes"]

_KIND_STYLE = {
    BufferKind.CONSTANT: Style.CONSTANT,
    BufferKind.PLACEHOLDER: Style.PLACEHOLDER,
    BufferKind.OWNED: Style.OWNED,
    BufferKind.ACTIVATION: {"shape": "box", "style": "filled", "fillcolor": "#f5f5f5", "color": "#757575"},
}
_SHARED = {"style": "filled,bold", "fillcolor": "#fff59d:#ffffff", "gradientangle": "90", "color": "#f57f17"}
_INSTR = {"shape": "box", "style": "rounded,filled", "fillcolor": "#ffffff", "color": "#212121"}
_COPY = {**_INSTR, "fillcolor": "#c8e6c9", "color": "#2e7d32"}
_OPERAND_EDGE = {OperandKind.IN: {"color": "#212121"}, OperandKind.OUT: {"color": "#1565c0"}, OperandKind.INOUT: {"color": "#e65100", "style": "bold"}}


def aligned_bytes(nbytes: int) -> int:
    """An activation's size in the arena, as the allocator rounds it."""
    return max(ALIGN, -(-nbytes // ALIGN) * ALIGN)


def shared_buffers(program: Program) -> dict[str, list[str]]:
    """Activations written by more than one data instruction -> the names of
    those instructions, in program order: the buffers that hold several values."""
    origins = analyze(program)
    writers: dict[str, list[str]] = {}
    for instr in program.instrs:
        if is_data(instr):
            for o in instr.operands:
                if o.kind.writes:
                    writers.setdefault(origins.origin(o.name), []).append(instr.name)
    acts = set(activations(program))
    return {b: names for b, names in writers.items() if b in acts and len(names) > 1}


@dataclass
class _Values:
    """The current value vertex of every buffer (by origin) while walking the program."""

    program: Program
    dot: Dot
    current: dict[str, str] = field(default_factory=dict)
    count: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.types = name_types(self.program)
        self.shared = shared_buffers(self.program)

    def _where(self, name: str) -> str:
        buf = self.program.buffer_by_name.get(name)
        if buf is not None:
            return f"{buf.kind.value} {buf.type}"
        offset = self.program.offset_of.get(name)
        at = "" if offset is None else f" at {offset}, {aligned_bytes(self.types[name].nbytes)} B"
        return f"{self.types.get(name, '?')}{at}"

    def new(self, name: str, note: str) -> str:
        k = self.count.get(name, 0)
        self.count[name] = k + 1
        ident = f"value:{name}#{k}"
        buf = self.program.buffer_by_name.get(name)
        style = dict(_KIND_STYLE[buf.kind if buf is not None else BufferKind.ACTIVATION])
        label = f"{name} {note}\n{self._where(name)}"
        if name in self.shared:
            style.update(_SHARED)
            label += f"\nshared buffer: holds {', '.join(self.shared[name])}"
        self.dot.vertex(ident, {**style, "label": label})
        self.current[name] = ident
        return ident

    def read(self, name: str) -> str:
        return self.current.get(name) or self.new(name, "(never written)")


def _thaw(v: object) -> object:
    return [_thaw(x) for x in v] if isinstance(v, tuple) else v


def _instr_label(i: int, instr: Instr) -> Html:
    e = Html.escape
    what = "copy" if instr.opcode is Opcode.COPY else (instr.op.value if instr.op is not None else instr.opcode.value)
    attrs = ", ".join(f"{k}={json.dumps(_thaw(v))}" for k, v in instr.attrs if v is not None)
    rows = [f"<B>{i}: {e(what)}</B>", e(instr.name)] + ([e(attrs)] if attrs else [])
    return Html('<TABLE BORDER="0" CELLSPACING="0">' + "".join(f"<TR><TD>{r}</TD></TR>" for r in rows) + "</TABLE>")


def _operand_edges(values: _Values, i: int, instr: Instr, origins: Analysis) -> None:
    me = f"instr:{i}"
    for pos, o in enumerate(instr.operands):
        buf = origins.origin(o.name)
        via = f" via view {o.name}" if buf != o.name else ""
        label = f"@{o.kind.value} {pos}{via}"
        style = _OPERAND_EDGE[o.kind]
        if o.kind.reads:
            values.dot.edge(values.read(buf), me, {**style, "label": label})
    for pos, o in enumerate(instr.operands):
        if o.kind.writes:
            buf = origins.origin(o.name)
            target = values.new(buf, f"after {i}: {instr.name}")
            values.dot.edge(me, target, {**_OPERAND_EDGE[o.kind], "label": f"@{o.kind.value} {pos}"})


def program_dot(program: Program, fault: InvariantViolation | None = None) -> str:
    """The picture of an allocated (or not) program as DOT text. ``fault``:
    an invariant the program breaks (its ``instruction`` index, if any, is
    drawn red, with a note saying what is wrong; an instruction that is not
    drawn, an ``alloc`` for one, is named in the note)."""
    passes = ", ".join(program.passes) or "none"
    peak = "" if program.peak_bytes is None else f", arena peak {program.peak_bytes} B"
    title = f"program {program.name}: passes {passes}{peak}"
    dot = Dot(program.name, {"rankdir": "TB", "label": title, "labelloc": "t", "fontsize": "14"})
    origins = analyze(program)
    values = _Values(program, dot)
    for buf in program.buffers:
        values.new(buf.name, "at entry")
    previous = None
    for i, instr in enumerate(program.instrs):
        if not is_data(instr):
            continue
        style = _COPY if instr.opcode is Opcode.COPY else _INSTR
        if fault is not None and fault.instruction == i:
            style = {**style, "color": ERROR, "penwidth": "3"}
        dot.vertex(f"instr:{i}", {**style, "label": _instr_label(i, instr)})
        _operand_edges(values, i, instr, origins)
        if previous is not None:  # program order, faint: the vertical spine of the picture
            dot.edge(previous, f"instr:{i}", {"style": "invis", "weight": "5"})
        previous = f"instr:{i}"
    if fault is not None:
        _fault_note(dot, program, fault)
    return dot.text()


def _fault_note(dot: Dot, program: Program, fault: InvariantViolation) -> None:
    """A red note with the broken invariant, tied to the faulty instruction's box."""
    where = f"{fault.stage}: " if fault.stage else ""
    at = fault.instruction
    drawn = at is not None and 0 <= at < len(program.instrs) and is_data(program.instrs[at])
    if at is not None and not drawn and 0 <= at < len(program.instrs):
        where += f"instruction {at} ({program.instrs[at].opcode.value} {program.instrs[at].name}, not drawn): "
    dot.vertex("fault", {**Style.NOTE, "label": textwrap.fill(f"{where}{fault.invariant}: {fault.detail}", 60, break_on_hyphens=False)})
    if drawn:
        dot.edge("fault", f"instr:{at}", Style.NOTE_EDGE)
