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
the output to a file. ``--print-after PASS`` (repeatable; ``lowering`` for the
lowered program; a name that is no stage of the pipeline is exit 2) and
``--print-after-all`` print the IR to stderr as each stage left it, before it
is verified. When a pass's IR breaks an invariant (or allocation
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
import contextlib
import shlex
import sys
from typing import TYPE_CHECKING

from refc.cli.common import add_compile_arguments, add_graph_argument, add_mutant_argument, in_file
from refc.cli.settings import compile_from_args, load_with_settings, note_recorded
from refc.cli.picture import add_picture_arguments, check_output, emit, emit_dot, picture_format
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
    p.add_argument("--print-after", action="append", default=[], metavar="PASS",
                   help="print the IR to stderr as lowering ('lowering') or pass PASS left it, before it is verified; repeatable")
    p.add_argument("--print-after-all", action="store_true", help="print the IR to stderr after lowering and after every pass")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from refcompiler.ir import Program

    check_output(args)
    graph, settings = load_with_settings(args)
    settings.check()
    note_recorded(args, settings)
    form = picture_format(args)
    if args.picture == "arena" and form is not PictureFormat.SVG:
        raise UsageError("--picture arena is drawn as SVG: add --format svg")
    _check_stage_names(args.print_after, settings.pipeline)
    printer = _Printer(set(args.print_after), args.print_after_all)
    try:
        with printer.watching():
            compiled = compile_from_args(graph, args, settings)
    except InvariantViolation as e:
        if form is not None and isinstance(e.program, Program):
            _draw_fault(args, e.program, e)
        elif form is not None:
            print(f"refc compile: nothing drawn: {e.invariant} is found before a program is made "
                  f"(refc show {shlex.quote(str(args.graph))} draws the graph, and a case's order)", file=sys.stderr)
        raise in_file(args.graph, e) from None
    finally:
        printer.unmatched()
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


def _check_stage_names(names: list[str], pipeline: object) -> None:
    """``UsageError`` (exit 2) for a ``--print-after`` name that is neither
    ``lowering`` nor a pass of ``pipeline``: it could never print."""
    if not names:
        return
    from refcompiler.passes import resolve_pipeline

    stages = ["lowering", *dict.fromkeys(name for name, _ in resolve_pipeline(pipeline))]
    unknown = sorted(set(names) - set(stages))
    if unknown:
        raise UsageError(f"--print-after {', '.join(unknown)}: no stage of pipeline {pipeline} has that name "
                         f"(stages: {', '.join(stages)})")


class _Printer:
    """``--print-after`` / ``--print-after-all``: the IR text of each program
    the pipeline makes, on stderr, as it came out of lowering or a pass (a
    pass that returned its input is said to have changed nothing)."""

    def __init__(self, stages: set[str], every: bool):
        self.stages, self.every = stages, every
        self.seen: list[str] = []
        self.last: object = None

    def watching(self) -> contextlib.AbstractContextManager[None]:
        if not (self.stages or self.every):
            return contextlib.nullcontext()
        from refcompiler.passes import watching

        return watching(self.show)

    def show(self, stage: str, program: "Program") -> None:
        self.seen.append(stage)
        if self.every or stage in self.stages:
            head = "; IR after lowering" if stage == "lowering" else f"; IR after pass {stage}"
            print(head + (": unchanged" if program is self.last else ""), file=sys.stderr)
            if program is not self.last:
                print(_text(program), file=sys.stderr, end="")
        self.last = program

    def unmatched(self) -> None:
        """Say which ``--print-after`` names no stage that ran."""
        missing = sorted(self.stages - set(self.seen))
        if missing:
            print(f"refc compile: --print-after {', '.join(missing)}: no such stage ran (stages: {', '.join(self.seen) or 'none'})", file=sys.stderr)


def _text(program: "Program") -> str:
    """The IR text form of a program a pass returned, whatever it holds."""
    from refcompiler.ir_text import print_program

    try:
        return print_program(program)
    except Exception as e:  # a user's pass may return what the text form cannot print: the verifier says what
        return f"; (this program cannot be printed: {type(e).__name__}: {e})\n"


def _draw_fault(args: argparse.Namespace, program: "Program", fault: InvariantViolation) -> None:
    """The picture asked for, of the program in which a compilation step found
    ``fault`` (the IR a pass returned, or the allocated program for MEM-1),
    the faulty instruction marked; the error is reported after it as usual.
    The arena timeline needs offsets: a fault found before allocation is
    drawn as the IR instead, and said so."""
    from refcompiler.errors import RefCompilerError
    from refcompiler.pictures import arena_svg, program_dot

    arena = args.picture == "arena" and bool(program.offsets)
    try:
        picture = arena_svg(program, fault) if arena else program_dot(program, fault)
    except RefCompilerError:
        raise
    except Exception as e:  # a user's pass made this program, however odd: the fault is still reported
        print(f"refc compile: cannot draw the faulty program ({type(e).__name__}: {e})", file=sys.stderr)
        return
    if args.picture == "arena" and not arena:
        print("refc compile: the fault was found before allocation: drawing the IR instead of the arena", file=sys.stderr)
    if arena:
        emit(args, picture)
    else:
        emit_dot(args, picture)
