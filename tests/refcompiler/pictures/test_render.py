"""``refcompiler.pictures.render``: a ``dot`` that crashes on a picture (a huge
layout) is bad usage naming the way out, not an internal error of refc."""

from __future__ import annotations

import os

import pytest

from refcompiler.errors import InternalError, UsageError
from refcompiler.pictures.render import PictureFormat, render


def _fake_dot(tmp_path, monkeypatch, body: str) -> None:
    dot = tmp_path / "dot"
    dot.write_text(f"#!/bin/sh\ncat >/dev/null\n{body}\n")
    dot.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")


def test_a_dot_that_crashes_is_usage_error_suggesting_dot_text(tmp_path, monkeypatch):
    _fake_dot(tmp_path, monkeypatch, "kill -SEGV $$")
    with pytest.raises(UsageError, match=r"dot crashed \(signal 11\).*try --format dot"):
        render("digraph { a -> b }", PictureFormat.SVG)


def test_a_dot_that_rejects_the_text_is_still_refcs_bug(tmp_path, monkeypatch):
    _fake_dot(tmp_path, monkeypatch, "echo 'syntax error in line 1' >&2; exit 1")
    with pytest.raises(InternalError, match="rejected refc's DOT text: syntax error in line 1"):
        render("digraph { a -> b }", PictureFormat.SVG)
