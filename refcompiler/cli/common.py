"""Helpers shared by the command modules: loading a graph, mutants, output."""

from __future__ import annotations

import argparse

from refcompiler.graph import Graph
from refcompiler.graph_json import load_graph

__all__ = ["add_graph_argument", "add_mutant_argument", "load"]


def add_graph_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("graph", metavar="G", help="a graph file (refc-graph/1 JSON) or a corpus case")


def load(args: argparse.Namespace) -> Graph:
    return load_graph(args.graph)


def add_mutant_argument(parser: argparse.ArgumentParser) -> None:
    """``--mutant NAME``: run with a deliberately wrong compiler (``refc mutants`` lists them).
    ``refcompiler.cli.main`` installs it around the command."""
    parser.add_argument("--mutant", metavar="NAME", default=None, help="install a mutant (see `refc mutants`)")
