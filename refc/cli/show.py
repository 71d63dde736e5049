"""``refc show G [--format text|dot|svg|png] [-o FILE]``: a graph as text or as a picture.

Works on invalid graphs too (the text lists their violations, a picture
outlines the nodes they name), so it exits 0 whenever the file loads; a
malformed file is exit 2, and so is a picture format without Graphviz's
``dot`` program installed. A corpus case with a ``"schedule"`` (a fuzz
finding), or with the ``"scheduler_order"`` its scheduler produced (data: the
scheduler is never imported), is drawn beside that order, with any ordering
it breaks in red.
"""

from __future__ import annotations

import argparse

from refc.cli.common import add_graph_argument, load
from refc.cli.picture import add_picture_arguments, check_output, drawing, emit, emit_dot, picture_format


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show", help="print a graph as text, or draw it (Graphviz DOT, SVG, PNG)")
    add_graph_argument(p)
    add_picture_arguments(p, text_help="a readable listing")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from refcompiler.printer import graph_text

    check_output(args)
    graph = load(args)
    if picture_format(args) is None:
        emit(args, graph_text(graph))
        return 0
    emit_dot(args, drawing(graph, args.graph))
    return 0
