"""Helpers shared by the command modules: loading a graph, mutants, output."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Iterator

from refcompiler.driver import Compiled, compile_graph
from refcompiler.errors import InvariantViolation, MalformedInput, RefCompilerError, UsageError
from refcompiler.files import check_writable_dir, check_writable_file, locked_dir, read_json
from refcompiler.graph import Graph
from refcompiler.graph_json import graph_from_doc, load_graph

if TYPE_CHECKING:
    from fuzz.case import Case
from refcompiler.schedulers import SCHEDULERS

__all__ = ["add_compile_arguments", "compile_from_args", "node_order", "Settings", "load_with_settings", "note_recorded", "add_graph_argument", "add_mutant_argument", "load", "file_path", "in_file", "whole_number", "positive_seconds",
           "out_dir", "out_file", "locked_out", "cores", "worker_count"]


def file_path(text: str) -> str:
    """An argparse type for a file name: an empty one (``--out ""``, an unset
    shell variable) is bad usage, not the current directory or no option."""
    if not text:
        raise argparse.ArgumentTypeError("expected a file name, got an empty string")
    return text


def add_graph_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("graph", metavar="G", type=file_path, help="a graph file (refc-graph/1 JSON) or a corpus case")


def load(args: argparse.Namespace) -> Graph:
    return load_graph(args.graph)


def add_mutant_argument(parser: argparse.ArgumentParser) -> None:
    """``--mutant NAME``: run with a deliberately wrong compiler (``refc mutants`` lists them).
    ``refc.cli.main`` installs it around the command."""
    parser.add_argument("--mutant", metavar="NAME", default=None, help="install a mutant (see `refc mutants`)")


def in_file(path: str, e: InvariantViolation) -> InvariantViolation:
    """``e`` with its message led by the graph file it was found in (``refc run: G:
    after pass P: IR-4: ...``), as ``refc check`` names the file on every line."""
    return e.at(f"{path}: {e.stage}" if e.stage else path)


def whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"needs {minimum} or more, got {value}")
        return value

    parse.__name__ = f"whole number >= {minimum}"
    return parse


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"needs a finite number of seconds above 0, got {text}")
    return value


def node_order(text: str) -> tuple[str, ...]:
    """An argparse type: ``--order a,b,c``, node names separated by commas."""
    names = tuple(n.strip() for n in text.split(","))
    if not names or any(not n for n in names):
        raise argparse.ArgumentTypeError(f"expected node names separated by commas, got {text!r}")
    return names


def add_compile_arguments(parser: argparse.ArgumentParser, *, from_case: bool = False) -> None:
    """``--scheduler``/``--schedule``, ``--seed``, ``--pipeline``: shared by
    ``refc compile``, ``refc run`` and ``refc validate``. With ``from_case``
    (compile, run) they default to what a corpus case records (``compile_settings``),
    and ``--order``, ``--allow-plugin`` and ``--no-mutant`` are added."""
    known = ", ".join(SCHEDULERS)
    recorded = "the case's, else " if from_case else ""
    parser.add_argument(
        "--scheduler",
        "--schedule",
        dest="scheduler",
        metavar="NAME",
        default=None if from_case else "topo",
        help=f"scheduler: {known}, or module:attribute for your own (default {recorded}topo)",
    )
    parser.add_argument("--seed", type=whole_number(0), default=None if from_case else 0, metavar="N",
                        help=f"seed of the scheduler (default {recorded}0)")
    parser.add_argument(
        "--pipeline",
        metavar="P",
        default=None if from_case else "O0",
        help=f"IR passes: O0 (none), O2 (all), a comma-separated list of pass names, or module:attribute (default {recorded}O0)",
    )
    if not from_case:
        return
    parser.add_argument("--order", type=node_order, default=None, metavar="A,B,...",
                        help="an explicit node order (every node once, respecting every dependency) instead of a scheduler's")
    parser.add_argument("--allow-plugin", dest="allow", action="append", default=[], metavar="MODULE",
                        help="let a corpus case import MODULE (its module:attribute scheduler or pipeline); repeatable")
    parser.add_argument("--no-mutant", action="store_true", help="compile with the correct compiler even if the case names a mutant")


@dataclass(frozen=True)
class Settings:
    """How ``refc compile``/``refc run`` compile a graph: the command line's
    options, else what the corpus case records. ``mutant``: the case's, installed
    around compiling (``--mutant`` is installed by ``refc.cli.main``);
    ``recorded``: what came from the case, for the user."""

    scheduler: str = "topo"
    seed: int = 0
    pipeline: str = "O0"
    order: tuple[str, ...] | None = None
    order_given: bool = False
    mutant: str | None = None
    recorded: tuple[str, ...] = ()
    inputs: tuple[tuple[str, Any], ...] = ()  # the case's input values, by storage name
    refusal: RefCompilerError | None = None  # why the case cannot be compiled as recorded

    def check(self) -> None:
        """Raise ``refusal``, if any: before anything of the case's is imported or compiled."""
        if self.refusal is not None:
            raise self.refusal


def load_with_settings(args: argparse.Namespace) -> tuple[Graph, Settings]:
    """The graph of ``args.graph`` and how to compile it: a graph file with the
    command line's options (their defaults topo, seed 0, O0); a corpus case
    (a file with case fields, ``fuzz.case``) under its recorded schedule (its
    ``schedule``, or its ``scheduler`` called with its ``scheduler_seed``), its
    pipeline and its mutant, each unless the command line says otherwise
    (``--order``/``--scheduler``/``--seed``, ``--pipeline``, ``--mutant``/``--no-mutant``).
    A case is checked as ``refc replay`` checks it (``fuzz.replay.case_problem``),
    and a plug-in it names runs only with ``--allow-plugin MODULE``
    (``UsageError`` otherwise, exit 2). An ``--order`` that is not a
    permutation of the graph's nodes is a ``UsageError`` naming the nodes."""
    from fuzz.case import CASE_FIELDS, case_from_doc

    doc = read_json(args.graph)
    if isinstance(doc, dict) and any(k in doc for k in CASE_FIELDS):
        case = case_from_doc(doc, path=args.graph)
        graph, settings = case.graph, _case_settings(case, args)
    else:
        graph = graph_from_doc(doc, path=args.graph)
        settings = Settings(args.scheduler or "topo", args.seed or 0, args.pipeline or "O0", args.order)
    if args.order is not None:
        from fuzz.replay import order_problem

        problem = order_problem(graph, args.order)
        if problem is not None:
            raise UsageError(f"{args.graph}: --order {problem} (SCH-1: a schedule runs every node of the graph once)")
    return graph, replace(settings, order_given=args.order is not None)


def _case_settings(case: "Case", args: argparse.Namespace) -> Settings:
    """``Settings`` from ``case`` where the command line is silent; the case's
    parts in use checked as replay checks them."""
    from fuzz.case import case_inputs
    from fuzz.replay import case_problem, plugin_modules

    own_order = args.order is None and args.scheduler is None
    used = replace(
        case,
        pipeline=case.pipeline if args.pipeline is None else "O0",
        schedule=case.schedule if own_order else None,
        scheduler=case.scheduler if own_order and case.schedule is None else None,
        mutant=case.mutant if args.mutant is None and not args.no_mutant else None,
    )
    refusal: RefCompilerError | None = None
    problem = case_problem(used)
    missing = [m for m in plugin_modules(used) if m not in {a.partition(":")[0] for a in args.allow}]
    if problem is not None:
        refusal = MalformedInput(problem.partition(": ")[2], path=args.graph, field=problem.partition(": ")[0])
    elif missing:
        flags = " ".join(f"--allow-plugin {m}" for m in missing)
        refusal = UsageError(f"{args.graph}: the case names plug-in {', '.join(missing)} (a case file is data; "
                             f"add {flags} to run it, or choose with --scheduler/--pipeline/--order)")
    recorded = []
    if used.schedule is not None:
        recorded.append(f"schedule {','.join(used.schedule)}")
    if used.scheduler is not None:
        recorded.append(f"scheduler {used.scheduler} (seed {used.scheduler_seed or 0})")
    if args.pipeline is None:
        recorded.append(f"pipeline {used.pipeline}")
    if used.mutant is not None:
        recorded.append(f"mutant {used.mutant}")
    seed = args.seed if args.seed is not None else (used.scheduler_seed or 0) if used.scheduler is not None else 0
    return Settings(
        scheduler=args.scheduler or used.scheduler or "topo",
        seed=seed,
        pipeline=args.pipeline or case.pipeline,
        order=args.order if args.order is not None else used.schedule,
        mutant=used.mutant,
        recorded=tuple(recorded),
        inputs=tuple(case_inputs(case).items()),
        refusal=refusal,
    )


def note_recorded(args: argparse.Namespace, settings: Settings) -> None:
    """Tell the user, on stderr, what was taken from the case."""
    if settings.recorded:
        print(f"{args.graph}: as the case records: {'; '.join(settings.recorded)}", file=sys.stderr)


def compile_from_args(graph: Graph, args: argparse.Namespace, settings: Settings | None = None) -> Compiled:
    """Compile ``graph`` with ``settings`` (default: the command line's
    options as given), the case's mutant installed around it. An explicit
    ``--order`` that breaks a dependency is a ``UsageError`` (exit 2) naming
    the nodes and SCH-1."""
    from refcompiler.mutants import activate

    s = settings or Settings(args.scheduler, args.seed, args.pipeline)
    s.check()
    try:
        with activate(s.mutant):
            return compile_graph(graph, scheduler=s.scheduler, seed=s.seed, pipeline=s.pipeline, schedule=s.order)
    except InvariantViolation as e:
        if s.order_given and e.invariant == "SCH-1":
            raise UsageError(f"{args.graph}: --order is not a legal order of the graph: {e}") from None
        raise


def out_dir(path: str) -> None:
    """``--out DIR``, checked before any work: a directory refc can write in
    (not a dangling link, a file, under a file, or read-only); else ``UsageError`` (exit 2)."""
    try:
        check_writable_dir(path)
    except OSError as e:
        raise UsageError(f"--out {path}: cannot write there: {e.strerror or e}") from None


def out_file(path: str) -> None:
    """``--out FILE``, checked before any work (see ``out_dir``); ``/dev/null`` is fine."""
    try:
        check_writable_file(path)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None


@contextlib.contextmanager
def locked_out(path: str) -> Iterator[None]:
    """Hold ``path/.lock`` for the block; a second campaign into ``path`` is a ``UsageError``."""
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(locked_dir(path))
        except OSError as e:
            raise UsageError(f"--out {path}: {e.strerror or e}") from None
        yield


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def worker_count(asked: int | None, *, force: bool = False) -> int | None:
    """``--workers``: at most ``cores()`` unless ``force`` (``--force-workers``)."""
    if asked is not None and asked > cores() and not force:
        raise UsageError(f"--workers {asked}: only {cores()} cores are available (--force-workers to run more anyway)")
    return asked
