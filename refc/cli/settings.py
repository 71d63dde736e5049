"""How ``refc compile`` and ``refc run`` compile a graph or a corpus case:
the command line's options, else what the case records (``load_with_settings``),
checked as ``refc replay`` checks a case (``fuzz.replay``)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from refcompiler.errors import InvariantViolation, MalformedInput, RefCompilerError, UsageError
from refcompiler.files import read_json

if TYPE_CHECKING:
    from fuzz.case import Case
    from refcompiler.driver import Compiled
    from refcompiler.graph import Graph

__all__ = ["Settings", "load_with_settings", "note_recorded", "compile_from_args"]


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
    target: str | None = None  # ``refc run``: the external compiler the case was found against, run as replay runs it
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
    from refcompiler.graph_json import graph_from_doc

    if getattr(args, "no_mutant", False) and args.mutant is not None:
        raise UsageError("--mutant and --no-mutant exclude each other")
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
    # only ``refc run`` runs a target (its ``--target``): a case found against one runs on
    # it there, as replay runs it; compile and validate compile it with refc, importing no target
    on_target = case.target is not None and hasattr(args, "target") and args.target is None
    used = replace(
        case,
        pipeline=case.pipeline if args.pipeline is None else "O0",
        schedule=case.schedule if own_order else None,
        scheduler=case.scheduler if own_order and case.schedule is None else None,
        mutant=case.mutant if args.mutant is None and not args.no_mutant else None,
        target=case.target if on_target else None,
    )
    refusal: RefCompilerError | None = None
    problem = case_problem(used)
    missing = [m for m in plugin_modules(used) if m not in {a.partition(":")[0] for a in args.allow}]
    if problem is not None:
        refusal = MalformedInput(problem.partition(": ")[2], path=args.graph, field=problem.partition(": ")[0])
    elif missing:
        flags = " ".join(f"--allow-plugin {m}" for m in missing)
        instead = "--target/--reference" if used.target is not None else "--scheduler/--pipeline/--order"
        refusal = UsageError(f"{args.graph}: the case names plug-in {', '.join(missing)} (a case file is data; "
                             f"add {flags} to run it, or choose with {instead})")
    recorded = []
    if used.target is not None:
        recorded.append(f"target {used.target.spec}")
    elif used.schedule is not None:
        recorded.append(f"schedule {','.join(used.schedule)}")
    if used.scheduler is not None and used.target is None:
        recorded.append(f"scheduler {used.scheduler} (seed {used.scheduler_seed or 0})")
    if args.pipeline is None and used.target is None:
        recorded.append(f"pipeline {used.pipeline}")
    if used.mutant is not None and used.target is None:
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
        target=None if used.target is None else used.target.spec,
    )


def note_recorded(args: argparse.Namespace, settings: Settings) -> None:
    """Tell the user, on stderr, what was taken from the case."""
    if settings.recorded:
        print(f"{args.graph}: as the case records: {'; '.join(settings.recorded)}", file=sys.stderr)


def compile_from_args(graph: Graph, args: argparse.Namespace, settings: Settings) -> Compiled:
    """Compile ``graph`` with ``settings``, the case's mutant installed around it. An explicit
    ``--order`` that breaks a dependency is a ``UsageError`` (exit 2) naming
    the nodes and SCH-1."""
    from refcompiler.driver import compile_graph
    from refcompiler.mutants import activate

    s = settings
    s.check()
    try:
        with activate(s.mutant):
            return compile_graph(graph, scheduler=s.scheduler, seed=s.seed, pipeline=s.pipeline, schedule=s.order)
    except InvariantViolation as e:
        if s.order_given and e.invariant == "SCH-1":
            raise UsageError(f"{args.graph}: --order is not a legal order of the graph: {e}") from None
        raise
