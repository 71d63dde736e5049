"""``refc show G [--format text|dot]``: print a graph as readable text or as Graphviz DOT.

Works on invalid graphs too (the text form lists their violations), so it
exits 0 whenever the file loads; a malformed file is exit 2.
"""

from __future__ import annotations

import argparse
import enum

from refc.cli.common import add_graph_argument, load
from refcompiler.printer import graph_dot, graph_text


class ShowFormat(enum.Enum):
    TEXT = "text"
    DOT = "dot"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show", help="print a graph as text or Graphviz DOT")
    add_graph_argument(p)
    p.add_argument(
        "--format",
        choices=[f.value for f in ShowFormat],
        default=ShowFormat.TEXT.value,
        help="text (default): a readable listing; dot: a drawing for Graphviz (`refc show G --format dot | dot -Tsvg`)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    graph = load(args)
    form = ShowFormat(args.format)
    print(graph_text(graph) if form is ShowFormat.TEXT else graph_dot(graph), end="")
    return 0
