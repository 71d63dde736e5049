"""``refc check G``: 0 valid, 1 invalid (each violation with its invariant id), 2 malformed."""

from __future__ import annotations

import argparse

from refc.cli.common import add_graph_argument, add_mutant_argument, load


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="verify a graph (G-1, OWN-1..4)")
    add_graph_argument(p)
    add_mutant_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from refcompiler.verifier import violations

    graph = load(args)
    found = violations(graph)
    for v in found:
        names = f" [{', '.join(v.names)}]" if v.names else ""
        print(f"{args.graph}: {v.invariant}: {v.detail}{names}")
    if not found:
        print(f"{args.graph}: ok ({len(graph.nodes)} nodes, {len(graph.storage)} storage)")
    return 1 if found else 0
