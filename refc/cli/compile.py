"""``refc compile G``: schedule, lower, optimise and allocate a graph; print the IR.

The output is the canonical IR text (``refcompiler.ir_text``): buffers with
their kinds, every operand with its kind (``@in``, ``@out``, ``@inout``),
arena offsets and peak bytes. Exit 0; 1 if an invariant breaks on the way
(an invalid graph, an illegal schedule from a user's scheduler, an IR
violation after a pass, MEM-1); 2 bad usage or a malformed graph.
"""

from __future__ import annotations

import argparse

from refc.cli.common import add_compile_arguments, add_graph_argument, add_mutant_argument, compile_from_args, in_file, load
from refcompiler.errors import InvariantViolation
from refcompiler.ir_text import print_program


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compile", help="schedule, lower, optimise and allocate a graph; print the IR")
    add_graph_argument(p)
    add_compile_arguments(p)
    add_mutant_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        compiled = compile_from_args(load(args), args)
    except InvariantViolation as e:
        raise in_file(args.graph, e) from None
    print(print_program(compiled.program), end="")
    return 0
