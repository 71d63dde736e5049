"""``refcompiler.pictures.dot``: quoting. A string from a file (a case's
``found_by``, a schedule's names) may hold any character JSON allows."""

from __future__ import annotations

from refcompiler.pictures.dot import Html, quote
from refcompiler.pictures.render import PictureFormat, render


def test_control_characters_are_shown_escaped_not_emitted():
    assert quote('a"\\b\nc') == '"a\\"\\\\b\\nc"'
    assert quote("x\x1b[31m\x00\r\t") == '"x\\\\x1b[31m\\\\x00\\\\r\\\\t"'
    assert Html.escape("<\x00>") == "&lt;\\x00&gt;"


def test_dot_accepts_a_label_with_a_nul():
    # a NUL in a label was passed through and dot rejected the text: exit 4, "refc's DOT text"
    text = "digraph g { %s [label=%s]; }" % (quote("n\x00"), quote("found by \x00\x1b"))
    assert render(text, PictureFormat.SVG).startswith(b"<?xml")
