"""``refc show G [--format text|dot|svg|png] [-o FILE]``: a graph as text or as a picture.

Works on invalid graphs too (the text lists their violations, a picture
outlines the nodes they name), so it exits 0 whenever the file loads; a
malformed file is exit 2, and so is a picture format without Graphviz's
``dot`` program installed. A corpus case with a ``"schedule"`` (a fuzz
finding) is drawn beside that schedule, with any ordering it breaks in red.
"""

from __future__ import annotations

import argparse

from refc.cli.common import add_graph_argument, load
from refc.cli.picture import add_picture_arguments, emit, emit_dot, picture_format
from refcompiler.errors import MalformedInput
from refcompiler.graph import Graph
from refcompiler.pictures import case_dot, graph_dot
from refcompiler.printer import graph_text


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show", help="print a graph as text, or draw it (Graphviz DOT, SVG, PNG)")
    add_graph_argument(p)
    add_picture_arguments(p, text_help="a readable listing")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    graph = load(args)
    if picture_format(args) is None:
        emit(args, graph_text(graph))
        return 0
    schedule = case_schedule(graph, args.graph)
    if schedule is None:
        emit_dot(args, graph_dot(graph))
    else:
        emit_dot(args, case_dot(graph, schedule, title=f"case {graph.name}", notes=case_notes(graph)))
    return 0


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
