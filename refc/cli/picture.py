"""``--format`` and ``-o FILE`` for the commands that draw pictures
(``refc show``, ``refc prove``, ``refc compile``): the choices, and writing the
result to stdout or, atomically, to a file."""

from __future__ import annotations

import argparse
import sys

from refc.cli.common import file_path
from refcompiler.errors import UsageError
from refcompiler.graph_json import write_atomic
from refcompiler.pictures import PictureFormat, render

__all__ = ["TEXT", "add_picture_arguments", "picture_format", "emit", "emit_dot", "write_output"]

TEXT = "text"


def add_picture_arguments(parser: argparse.ArgumentParser, *, text_help: str) -> None:
    """``--format text|dot|svg|png`` (default text) and ``-o/--output FILE``."""
    parser.add_argument(
        "--format",
        choices=[TEXT, *(f.value for f in PictureFormat)],
        default=TEXT,
        help=f"text (default): {text_help}; dot: Graphviz DOT; svg, png: a picture (needs Graphviz's dot program)",
    )
    parser.add_argument("-o", "--output", type=file_path, metavar="FILE", default=None, help="write to FILE instead of stdout")


def picture_format(args: argparse.Namespace) -> PictureFormat | None:
    """The picture format asked for, or ``None`` for text."""
    return None if args.format == TEXT else PictureFormat(args.format)


def write_output(args: argparse.Namespace, data: bytes) -> None:
    """``data`` to ``args.output`` (atomically) or to stdout."""
    if args.output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        write_atomic(args.output, lambda f: f.write(data))
    except OSError as e:
        raise UsageError(f"cannot write {args.output}: {e.strerror or e}") from None


def emit(args: argparse.Namespace, text: str) -> None:
    """Text output of a command that also takes ``-o``."""
    write_output(args, text.encode())


def emit_dot(args: argparse.Namespace, dot_text: str) -> None:
    """A DOT picture, rendered to the format asked for."""
    form = picture_format(args)
    write_output(args, render(dot_text, form if form is not None else PictureFormat.DOT))
