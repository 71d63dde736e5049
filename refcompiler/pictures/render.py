"""Turning DOT text into SVG or PNG with Graphviz's ``dot`` program.

DOT text needs nothing installed; SVG and PNG need the ``dot`` program, and
its absence is bad usage (exit 2) with a message that names the package to
install. ``dot`` gets a time limit so that a huge graph cannot hang refc.
"""

from __future__ import annotations

import enum
import shutil
import subprocess

from refcompiler.errors import InternalError, UsageError

__all__ = ["PictureFormat", "render", "have_dot", "DOT_SECONDS", "INSTALL_HINT"]

DOT_SECONDS = 60.0  # the longest a single `dot` layout may take
INSTALL_HINT = "install Graphviz (Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz)"


class PictureFormat(enum.Enum):
    DOT = "dot"
    SVG = "svg"
    PNG = "png"


def have_dot() -> bool:
    return shutil.which("dot") is not None


def render(dot_text: str, form: PictureFormat, seconds: float = DOT_SECONDS) -> bytes:
    """``dot_text`` as ``form``: the text itself for DOT, else the output of
    ``dot -Tsvg``/``-Tpng``. Raises ``UsageError`` (exit 2) when ``dot`` is not
    installed, runs past ``seconds`` (default ``DOT_SECONDS``) or crashes; ``InternalError`` when it rejects the
    text (the DOT writers' bug, not the user's)."""
    if form is PictureFormat.DOT:
        return dot_text.encode()
    program = shutil.which("dot")
    if program is None:
        raise UsageError(f"--format {form.value} needs Graphviz's `dot` program, which is not on PATH: {INSTALL_HINT}; --format dot works without it")
    try:
        done = subprocess.run(
            [program, f"-T{form.value}"], input=dot_text.encode(), capture_output=True, timeout=seconds, check=False
        )
    except subprocess.TimeoutExpired:
        raise UsageError(f"Graphviz's dot took longer than {seconds:.0f} s to lay out the picture; try --format dot") from None
    if done.returncode < 0:  # dot itself crashed (a segfault on a huge layout): not refc's DOT text
        raise UsageError(f"Graphviz's dot crashed (signal {-done.returncode}) laying out the picture ({len(dot_text)} characters of DOT); try --format dot")
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise InternalError(f"dot -T{form.value} rejected refc's DOT text: {message[0] if message else done.returncode}")
    return done.stdout
