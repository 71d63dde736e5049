"""``--format`` and ``-o FILE`` for the commands that draw pictures
(``refc show``, ``refc prove``, ``refc compile``): the choices, and writing the
result to stdout or, atomically, to a file."""

from __future__ import annotations

import argparse
import sys

from refc.cli.common import file_path
from refcompiler.errors import MalformedInput, UsageError
from refcompiler.graph import Graph
from refcompiler.graph_json import write_atomic
from refcompiler.pictures import PictureFormat, case_dot, graph_dot, render

__all__ = ["TEXT", "add_picture_arguments", "picture_format", "emit", "emit_dot", "write_output", "case_schedule", "case_notes", "drawing"]

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


def case_schedule(graph: Graph, path: str) -> list[str] | None:
    """A corpus case's ``"schedule"`` field, or ``None`` when it has none."""
    schedule = dict(graph.meta).get("schedule")
    if schedule is None:
        return None
    if not isinstance(schedule, list) or not all(isinstance(n, str) for n in schedule):
        raise MalformedInput("must be a list of node names", path=path, field="schedule")
    return schedule


def case_notes(graph: Graph) -> list[str]:
    """The provenance of a case, one line each: its expectation, who found it."""
    meta = dict(graph.meta)
    notes = []
    if meta.get("mutant"):
        notes.append(f"kills mutant {meta['mutant']}" + (f" (pipeline {meta['pipeline']})" if meta.get("pipeline") else ""))
    if meta.get("found_by"):
        notes.append(f"found by: {meta['found_by']}")
    return [str(n) for n in notes]


def drawing(graph: Graph, path: str) -> str:
    """The DOT picture of a graph file: a corpus case with a ``"schedule"`` beside
    that schedule (``case_dot``), any other graph alone (``graph_dot``)."""
    schedule = case_schedule(graph, path)
    if schedule is None:
        return graph_dot(graph)
    return case_dot(graph, schedule, title=f"case {graph.name}", notes=case_notes(graph))
