"""``--format`` and ``-o FILE`` for the commands that draw pictures
(``refc show``, ``refc prove``, ``refc compile``): the choices, and writing the
result to stdout or, atomically, to a file."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from refc.cli.common import file_path, out_file
from refcompiler.errors import MalformedInput, RefCompilerError, UsageError
from refcompiler.files import write_atomic
from refcompiler.pictures.render import PictureFormat, render

if TYPE_CHECKING:
    from refcompiler.graph import Graph

__all__ = ["TEXT", "add_picture_arguments", "check_output", "picture_format", "emit", "emit_dot", "write_output", "case_schedule", "case_order", "case_notes", "drawing"]

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


def check_output(args: argparse.Namespace) -> None:
    """Before any work: ``-o FILE`` can be written and is not the graph file the
    command draws (``common.out_file``)."""
    if args.output is not None:
        out_file(args.output, reads=[args.graph])


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
    return _names_field(graph, path, "schedule")


def _names_field(graph: Graph, path: str, name: str) -> list[str] | None:
    value = dict(graph.meta).get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise MalformedInput("must be a list of node names", path=path, field=name)
    return value


def case_order(graph: Graph, path: str) -> tuple[list[str], str] | None:
    """The order a case is drawn beside, and its column's title: its
    ``"schedule"``, else the ``"scheduler_order"`` its scheduler produced when
    the case was found (read as data: the scheduler is never run), else
    ``None``."""
    schedule = case_schedule(graph, path)
    if schedule is not None:
        return schedule, "the case's schedule"
    order = _names_field(graph, path, "scheduler_order")
    if order is None:
        return None
    scheduler = dict(graph.meta).get("scheduler")
    return order, f"the order {scheduler} produced" if isinstance(scheduler, str) else "the scheduler's order"


def case_notes(graph: Graph) -> list[str]:
    """The provenance of a case, one line each: the mutant it kills, who found
    it, the target and configurations it was found against."""
    from refcompiler.limits import clipped
    from refcompiler.pictures.graph import MAX_NOTE

    meta = dict(graph.meta)
    notes = []
    if meta.get("mutant"):
        notes.append(f"kills mutant {meta['mutant']}" + (f" (pipeline {meta['pipeline']})" if meta.get("pipeline") else ""))
    if meta.get("found_by"):
        notes.append(f"found by: {meta['found_by']}")
    target = meta.get("target")
    if isinstance(target, dict) and target.get("name"):  # a case found against a target: which configuration failed
        failing, passing = target.get("failing"), target.get("passing")
        notes.append(f"target {target['name']}" + (f": {failing} fails" if failing else "") + (f", {passing} passes" if failing and passing else ""))
    return [clipped(str(n), MAX_NOTE) for n in notes]  # a file's text: a DOT string holds at most 16 KiB


def allow_flags(path: str | Path) -> list[str]:
    """``--allow-plugin MODULE`` for each plug-in module the case at ``path``
    names (``fuzz.replay.plugin_modules``): a command that runs the case needs
    them. None when its case fields are malformed."""
    from fuzz.corpus import load_case
    from fuzz.replay import plugin_modules

    try:
        modules = plugin_modules(load_case(path))
    except RefCompilerError:
        return []
    return [w for module in modules for w in ("--allow-plugin", module)]


def drawing(graph: Graph, path: str) -> str:
    """The DOT picture of a graph file: a corpus case with a ``"schedule"`` or a
    ``"scheduler_order"`` beside that order (``case_dot``), any other graph
    alone (``graph_dot``)."""
    from refcompiler.pictures import case_dot, graph_dot

    from fuzz.case import finding_from_doc

    record = finding_from_doc(dict(graph.meta).get("finding"), path)  # a malformed one: MalformedInput naming the field
    found = case_order(graph, path)
    # the command that draws the case's program (it reads the case again: only when it is shown)
    # (none for an order the compiler refuses, SCH-1: no program is made)
    refused = record is not None and record.signature.startswith("SCH-1")
    program = shlex.join(["refc", "compile", path, "--format", "svg", *allow_flags(path)]) if (found is not None and not refused) or (
        record is not None and record.instruction is not None) else ""
    finding = None
    if record is not None:  # what the campaign found: its names red, beside its signature and explanation
        at = "" if record.instruction is None else f" (IR instruction {record.instruction}: {program})"
        finding = (list(record.nodes), f"found: {record.signature}: {record.explanation}{at}")
    if found is None:
        return graph_dot(graph, finding, case_notes(graph))
    order, label = found
    drawn = _graph_of(graph, order)
    _check_order(drawn, order, path, "schedule" if case_schedule(graph, path) is not None else "scheduler_order")
    return case_dot(drawn, order, title=f"case {graph.name}", notes=case_notes(graph), label=label, program=program, finding=finding)


def _check_order(graph: Graph, order: list[str], path: str, field: str) -> None:
    """A case's order names only ``graph``'s nodes, each once (it may miss some: a
    scheduler's order of the graph without its dead code; a ``scheduler_order``
    may repeat one, as the scheduler did: the picture says so); else
    ``MalformedInput``. A file's order of two million names drew 400 MB of DOT."""
    from fuzz.replay import order_problem

    repeated = field == "schedule" and len(set(order)) != len(order)
    if repeated or len(order) > len(graph.nodes) or not set(order) <= set(graph.node_by_name):
        raise MalformedInput(order_problem(graph, order) or "names a node twice", path=path, field=field)


def _graph_of(graph: Graph, order: list[str]) -> Graph:
    """The graph ``order`` orders: ``graph``, or, when it names the private
    copies that break save cycles (a scheduler's order of the graph the
    compiler schedules), that graph (``scheduled_graph``)."""
    if set(order) <= set(graph.node_by_name):
        return graph
    from refcompiler.driver import scheduled_graph
    from refcompiler.verifier import violations

    if violations(graph):
        return graph
    scheduled = scheduled_graph(graph)
    return scheduled if set(order) <= set(scheduled.node_by_name) else graph
