"""Writing Graphviz DOT text: quoting, attribute lists, and a small line builder.

Every picture in ``refcompiler.pictures`` is DOT text made by plain functions
(no Graphviz library is needed to produce it); ``render`` turns it into SVG or
PNG with the ``dot`` program when that is installed.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Mapping

from refcompiler.errors import InternalError

__all__ = ["quote", "attr_list", "Html", "Dot", "FONT"]

FONT = "Helvetica"


@dataclass(frozen=True)
class Html:
    """An HTML-like label (``label=<...>``): emitted as is, not quoted."""

    text: str

    @staticmethod
    def escape(text: object) -> str:
        return visible(html.escape(str(text), quote=True))


def quote(text: str) -> str:
    """``text`` as a DOT string: double quotes, with quotes, backslashes and newlines
    escaped, and other control characters shown (``visible``)."""
    return '"' + visible(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


# Control characters but the newline: a case's fields are data (found_by, a
# schedule's names), and Graphviz rejects a NUL while an ESC would reach a terminal.
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """``text`` with each control character but the newline written as its
    Python escape (``\\x1b``, ``\\t``), so that it is drawn, never sent raw."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def _value(v: str | Html) -> str:
    return f"<{v.text}>" if isinstance(v, Html) else quote(v)


def attr_list(attrs: Mapping[str, str | Html]) -> str:
    return "[" + ", ".join(f"{k}={_value(v)}" for k, v in attrs.items()) + "]"


@dataclass
class Dot:
    """A digraph under construction: ``vertex``, ``edge``, ``open``/``close`` of
    subgraphs, then ``text()``. Ids are quoted, so any name is safe."""

    name: str
    graph_attrs: Mapping[str, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    depth: int = 1

    def __post_init__(self) -> None:
        self.lines.append(f"digraph {quote(self.name)} {{")
        attrs = {"fontname": FONT, **self.graph_attrs}
        self.raw(f"graph {attr_list(attrs)};")
        self.raw(f'node [fontname="{FONT}", fontsize="10"];')
        self.raw(f'edge [fontname="{FONT}", fontsize="9"];')

    def raw(self, statement: str) -> None:
        self.lines.append("  " * self.depth + statement)

    def vertex(self, ident: str, attrs: Mapping[str, str | Html]) -> None:
        self.raw(f"{quote(ident)} {attr_list(attrs)};")

    def edge(self, source: str, target: str, attrs: Mapping[str, str | Html] | None = None) -> None:
        self.raw(f"{quote(source)} -> {quote(target)} {attr_list(attrs or {})};")

    def open(self, ident: str, attrs: Mapping[str, str | Html] | None = None) -> None:
        """Start a subgraph (``cluster_...`` ids draw a box); ``attrs`` are its graph attributes."""
        self.raw(f"subgraph {quote(ident)} {{")
        self.depth += 1
        if attrs:
            self.raw(f"graph {attr_list(attrs)};")

    def close(self) -> None:
        self.depth -= 1
        self.raw("}")

    def same_rank(self, rank: str, idents: list[str]) -> None:
        """Put ``idents`` on one rank (``source``, ``sink`` or ``same``)."""
        if idents:
            self.raw("{rank=" + rank + "; " + " ".join(quote(i) + ";" for i in idents) + "}")

    def text(self) -> str:
        if self.depth != 1:
            raise InternalError("a DOT subgraph was left open")
        return "\n".join([*self.lines, "}"]) + "\n"
