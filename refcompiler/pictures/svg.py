"""Writing SVG by hand: escaped elements, for pictures refc draws itself
(the arena timeline, the charts of a campaign report)."""

from __future__ import annotations

import html
from typing import Mapping

__all__ = ["element", "text", "document", "FONT"]

FONT = "Helvetica, Arial, sans-serif"


def _attrs(attrs: Mapping[str, object]) -> str:
    # a trailing underscore lets a Python keyword name an attribute (class_)
    return "".join(f' {k.rstrip("_").replace("_", "-")}="{html.escape(str(v), quote=True)}"' for k, v in attrs.items())


def element(tag: str, content: str = "", **attrs: object) -> str:
    """``<tag attrs>content</tag>``; ``content`` is markup (already escaped)."""
    return f"<{tag}{_attrs(attrs)}>{content}</{tag}>" if content else f"<{tag}{_attrs(attrs)}/>"


def text(x: float, y: float, words: str, **attrs: object) -> str:
    """A text element; ``words`` are escaped."""
    return element("text", html.escape(words), x=f"{x:.1f}", y=f"{y:.1f}", **attrs)


def document(width: float, height: float, body: list[str], *, title: str) -> str:
    """A standalone SVG document (also fit to be inlined in HTML)."""
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="{FONT}" font-size="11">'
    )
    return "\n".join([head, element("title", html.escape(title)), *body, "</svg>"]) + "\n"
