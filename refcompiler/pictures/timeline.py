"""The arena timeline of an allocated program, drawn as SVG by refc itself.

Instruction index runs left to right, arena offset bottom to top. Every
activation is one box: from its ``alloc`` to its ``dealloc`` (the range in
which it owns its bytes, ``ir_analysis.live_ranges``) and from its offset to
its offset plus its (aligned) size. Two boxes that overlap would break MEM-1;
a box that several values share (a buffer ``share_buffers`` reused) is hatched
and lists them. A dashed line marks the peak. Hovering a box shows its
numbers (an SVG ``<title>``).
"""

from __future__ import annotations

import textwrap

from refcompiler.errors import InvariantViolation
from refcompiler.ir import Program
from refcompiler.ir_analysis import activations, is_data, live_ranges, name_types
from refcompiler.pictures.graph import ERROR
from refcompiler.pictures.program import aligned_bytes, shared_buffers
from refcompiler.pictures.svg import document, element, text

__all__ = ["arena_svg"]

_LEFT, _TOP, _RIGHT, _BOTTOM = 80.0, 50.0, 30.0, 130.0
_PLOT_HEIGHT = 360.0
_COLORS = ("#90caf9", "#a5d6a7", "#ffcc80", "#ce93d8", "#80deea", "#ef9a9a", "#c5e1a5", "#b0bec5")
_HATCH = (
    '<defs><pattern id="shared" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
    '<rect width="8" height="8" fill="#fff59d"/><line x1="0" y1="0" x2="0" y2="8" stroke="#f57f17" stroke-width="3"/>'
    "</pattern></defs>"
)


def _nice_step(span: float, ticks: int = 6) -> int:
    raw = max(1.0, span / ticks)
    step = 1
    while step < raw:
        for factor in (2, 5, 10):
            if step * factor >= raw:
                return step * factor
        step *= 10
    return step


class _Scale:
    def __init__(self, program: Program, peak: int):
        self.n = max(1, len(program.instrs))
        self.cell = max(4.0, min(28.0, 1100.0 / self.n))
        self.width = self.n * self.cell
        self.peak = max(1, peak)
        self.per_byte = _PLOT_HEIGHT / self.peak

    def x(self, index: float) -> float:
        return _LEFT + index * self.cell

    def y(self, offset: float) -> float:
        return _TOP + _PLOT_HEIGHT - offset * self.per_byte


def _boxes(program: Program, s: _Scale, faulty: tuple[str, ...] = ()) -> list[str]:
    ranges = live_ranges(program)
    types = name_types(program)
    shared = shared_buffers(program)
    out = []
    for k, name in enumerate(activations(program)):
        offset = program.offset_of.get(name)
        if offset is None:
            continue
        size = aligned_bytes(types[name].nbytes)
        start, end = ranges[name]
        x, w = s.x(start), (end - start + 1) * s.cell
        y_top, h = s.y(offset + size), max(2.0, size * s.per_byte)
        holds = shared.get(name)
        fill = "url(#shared)" if holds else _COLORS[k % len(_COLORS)]
        tip = f"{name}: offset {offset}, {size} B, alloc at {start}, dealloc at {end}" + (f"; shared by {', '.join(holds)}" if holds else "")
        stroke, width = ("#e65100", "2.5") if holds else ("#37474f", "1")
        if name in faulty:
            stroke, width = ERROR, "3"
        rect = element("rect", element("title", tip), x=f"{x:.1f}", y=f"{y_top:.1f}", width=f"{w:.1f}", height=f"{h:.1f}",
                       fill=fill, stroke=stroke, stroke_width=width, class_="buffer")
        out.append(rect)
        label = name + (f" = {', '.join(holds)}" if holds else "")
        if h >= 12 and w >= 7 * len(label):
            out.append(text(x + 4, y_top + min(h / 2 + 4, 14), label, font_size="10"))
    return out


def _axes(program: Program, s: _Scale) -> list[str]:
    base = s.y(0)
    out = [element("line", x1=_LEFT, y1=base, x2=_LEFT + s.width, y2=base, stroke="#212121"),
           element("line", x1=_LEFT, y1=_TOP, x2=_LEFT, y2=base, stroke="#212121")]
    step = _nice_step(s.peak)
    for b in range(0, s.peak + 1, step):
        out.append(text(_LEFT - 6, s.y(b) + 4, f"{b}", text_anchor="end"))
        out.append(element("line", x1=_LEFT - 3, y1=s.y(b), x2=_LEFT, y2=s.y(b), stroke="#212121"))
    every = 1 if s.cell >= 14 else _nice_step(s.n / (s.width / 28))
    for i, instr in enumerate(program.instrs):
        mid = s.x(i + 0.5)
        if i % every == 0:
            out.append(text(mid, base + 14, str(i), text_anchor="middle", font_size="9"))
        if is_data(instr) and s.cell >= 10:
            what = instr.op.value if instr.op is not None else instr.opcode.value
            out.append(text(mid + 3, base + 24, f"{what} {instr.name}", font_size="9", transform=f"rotate(60 {mid + 3:.1f} {base + 24:.1f})"))
    out.append(text(_LEFT + s.width / 2, base + _BOTTOM - 10, "instruction index", text_anchor="middle"))
    out.append(text(16, _TOP + _PLOT_HEIGHT / 2, "arena offset (bytes)", text_anchor="middle", transform=f"rotate(-90 16 {_TOP + _PLOT_HEIGHT / 2:.1f})"))
    return out


def arena_svg(program: Program, fault: InvariantViolation | None = None) -> str:
    """The arena timeline of ``program`` (allocated: offsets set) as an SVG
    document. ``fault``: an invariant the allocation breaks (MEM-1), said in
    red under the plot, the activations it names outlined red."""
    peak = program.peak_bytes or 0
    s = _Scale(program, peak)
    passes = ", ".join(program.passes) or "no passes"
    shared = shared_buffers(program)
    title = f"arena of {program.name} ({passes}): peak {peak} B, {len(activations(program))} activations, {len(shared)} shared"
    body = [_HATCH, text(_LEFT, 22, title, font_size="13", font_weight="bold")]
    body += _axes(program, s)
    body += _boxes(program, s, () if fault is None else fault.names)
    if not activations(program):
        body.append(text(_LEFT + 10, _TOP + 20, "no activations: the arena is empty"))
    else:
        y = s.y(peak)
        body.append(element("line", x1=_LEFT, y1=y, x2=_LEFT + s.width, y2=y, stroke="#c62828", stroke_dasharray="6 4"))
        body.append(text(_LEFT + s.width, y - 4, f"peak {peak} B", text_anchor="end", fill="#c62828"))
    legend_y = _TOP - 14
    body.append(element("rect", x=_LEFT, y=legend_y - 9, width=12, height=10, fill="url(#shared)", stroke="#e65100"))
    body.append(text(_LEFT + 16, legend_y, "shared buffer: several values in turn (box = alloc to dealloc)", font_size="9"))
    height = _TOP + _PLOT_HEIGHT + _BOTTOM
    if fault is not None:
        where = f"{fault.stage}: " if fault.stage else ""
        for line in textwrap.wrap(f"{where}{fault.invariant}: {fault.detail}", 100, break_on_hyphens=False):
            body.append(text(_LEFT, height + 4, line, fill=ERROR, font_size="11"))
            height += 15
    return document(max(_LEFT + s.width + _RIGHT, 520), height, body, title=title)
