"""``refc compile G``: schedule, lower, optimise and allocate a graph; print the IR.

The output is the canonical IR text (``refcompiler.ir_text``): buffers with
their kinds, every operand with its kind (``@in``, ``@out``, ``@inout``),
arena offsets and peak bytes. Exit 0; 1 if an invariant breaks on the way
(an invalid graph, an illegal schedule from a user's scheduler, an IR
violation after a pass, MEM-1); 2 bad usage or a malformed graph.

``--format dot|svg|png`` draws the IR instead (``--picture ir``, the default:
instructions and the values they read and write,
``refcompiler.pictures.program_dot``), or with ``--format svg --picture arena``
the arena timeline (``refcompiler.pictures.arena_svg``). ``-o FILE`` writes
the output to a file. When a pass's IR breaks an invariant (or allocation
breaks MEM-1), a picture asked for is of that faulty program, the faulty
instruction drawn red beside what is wrong, and the exit code is still 1.

A corpus case is compiled as it records (its ``schedule``, or its
``scheduler`` called with its ``scheduler_seed``; its ``pipeline`` and
``mutant``; a line on stderr says so) unless ``--order``, ``--scheduler``,
``--seed``, ``--pipeline``, ``--mutant`` or ``--no-mutant`` say otherwise; a
plug-in it names is imported only with ``--allow-plugin MODULE``.
``--order a,b,c`` compiles that order: one that is not a permutation of the
graph's nodes or breaks a dependency is exit 2 naming the nodes (SCH-1).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from refc.cli.common import add_compile_arguments, add_graph_argument, add_mutant_argument, in_file
from refc.cli.settings import compile_from_args, load_with_settings, note_recorded
from refc.cli.picture import add_picture_arguments, emit, emit_dot, picture_format
from refcompiler.errors import InvariantViolation, UsageError
from refcompiler.pictures.render import PictureFormat

if TYPE_CHECKING:
    from refcompiler.ir import Program

PICTURES = ("ir", "arena")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compile", help="schedule, lower, optimise and allocate a graph; print the IR")
    add_graph_argument(p)
    add_compile_arguments(p, from_case=True)
    add_mutant_argument(p)
    add_picture_arguments(p, text_help="the IR's text form")
    p.add_argument("--picture", choices=PICTURES, default="ir", help="what --format draws: ir (default), or arena: the arena timeline (SVG)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from refcompiler.ir import Program

    graph, settings = load_with_settings(args)
    settings.check()
    note_recorded(args, settings)
    form = picture_format(args)
    if args.picture == "arena" and form is not PictureFormat.SVG:
        raise UsageError("--picture arena is drawn as SVG: add --format svg")
    try:
        compiled = compile_from_args(graph, args, settings)
    except InvariantViolation as e:
        if form is not None and isinstance(e.program, Program):
            _draw_fault(args, e.program, e)
        raise in_file(args.graph, e) from None
    if args.picture == "arena":
        from refcompiler.pictures import arena_svg

        emit(args, arena_svg(compiled.program))
    elif form is None:
        from refcompiler.ir_text import print_program

        emit(args, print_program(compiled.program))
    else:
        from refcompiler.pictures import program_dot

        emit_dot(args, program_dot(compiled.program))
    return 0


def _draw_fault(args: argparse.Namespace, program: "Program", fault: InvariantViolation) -> None:
    """The picture asked for, of the program in which a compilation step found
    ``fault`` (the IR a pass returned, or the allocated program for MEM-1),
    the faulty instruction marked; the error is reported after it as usual.
    The arena timeline needs offsets: a fault found before allocation is
    drawn as the IR instead, and said so."""
    from refcompiler.errors import RefCompilerError
    from refcompiler.pictures import arena_svg, program_dot

    try:
        if args.picture == "arena" and program.offsets:
            picture = arena_svg(program, fault)
        else:
            picture = program_dot(program, fault)
    except RefCompilerError:
        raise
    except Exception as e:  # a user's pass made this program, however odd: the fault is still reported
        print(f"refc compile: cannot draw the faulty program ({type(e).__name__}: {e})", file=sys.stderr)
        return
    if args.picture == "arena" and not program.offsets:
        print("refc compile: the fault was found before allocation: drawing the IR instead of the arena", file=sys.stderr)
    if args.picture == "arena" and program.offsets:
        emit(args, picture)
    else:
        emit_dot(args, picture)
