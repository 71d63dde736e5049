"""``refc run G``: execute a graph, compiled (default) or with the reference interpreter.

``refc run G --reference [--runs N] [--inputs F.npz] [--out F.npz]`` runs the
schedule-free reference interpreter (DESIGN §2) ``N`` times; without
``--reference`` the graph is compiled (``--schedule``/``--scheduler``,
``--seed``, ``--pipeline``) and the compiled program executed. Either way:

- the graph is verified first: an invalid graph is exit 1, one line per
  violation with its invariant id;
- ``--inputs`` replaces initial values by storage name (a bad key, shape or
  dtype is exit 2 naming the file and the key);
- ``--out`` writes every placeholder and owned variable after the last run to
  an ``.npz`` keyed by storage name (``--out -``: to stdout, nothing else
  printed there; ``/dev/null`` is fine); it is checked before any work (a
  dangling link, a link, a directory or a read-only place is exit 2); without
  it a short summary is printed;
- a run-time error (an embedding id out of range) is exit 1, one line naming
  the node and the id.

A corpus case runs with its input values and is compiled as it records
(``refc compile``'s rules: its schedule or scheduler and seed, pipeline and
mutant, unless the command line says otherwise; ``--order a,b,c``;
``--allow-plugin MODULE`` for a plug-in it names); a case found against an
external target runs on that target (as ``refc replay`` does) unless
``--target`` or ``--reference`` says otherwise.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from refc.cli import run_target
from refc.cli.common import add_compile_arguments, add_graph_argument, add_mutant_argument, file_path, in_file, out_file, whole_number
from refc.cli.settings import Settings, compile_from_args, load_with_settings, note_recorded
from refcompiler.errors import ExecutionError, InvariantViolation, UsageError

if TYPE_CHECKING:
    import numpy as np

    from refcompiler.graph import Graph
    from refcompiler.values import Values


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="execute a graph (compiled, or --reference) and print or save the final values")
    add_graph_argument(p)
    p.add_argument(
        "--reference",
        action="store_true",
        help="run the schedule-free reference interpreter instead of compiling",
    )
    p.add_argument("--runs", type=whole_number(1), default=None, metavar="N", help="run N times in a row (default 1; 2 with --target; at most REFC_MAX_RUNS, 100000, and N times the graph's bytes at most REFC_MAX_RUN_BYTES, 64 GiB)")
    p.add_argument("--inputs", metavar="F.npz", type=file_path, help="initial values by storage name (placeholders, owned variables)")
    p.add_argument("--out", metavar="F.npz", type=file_path,
                   help="write the final placeholders and owned variables here (- for stdout)")
    add_mutant_argument(p)
    add_compile_arguments(p, from_case=True)
    run_target.add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from refcompiler.passes import resolve_pipeline
    from refcompiler.printer import values_text
    from refcompiler.schedulers import resolve_scheduler
    from refcompiler.verifier import violations

    if args.out is not None and args.out != "-":
        out_file(args.out, reads=[args.graph])  # not --inputs: values carried on to the next run replace it (the file is read first)
    graph, settings = load_with_settings(args)
    if args.config is not None and args.reference:
        raise UsageError(f"--config {args.config!r} chooses a configuration of an external compiler; --reference runs none")
    if args.config is not None and args.target is None and settings.target is None:
        # else ignored: the run would not be the configuration asked for
        raise UsageError(f"--config {args.config!r} chooses a configuration of an external compiler: "
                         "it needs --target NAME, or a case found against one")
    if args.reference:
        # not used, but an unknown name given is still bad usage (2); the case's are not imported
        resolve_scheduler(args.scheduler or "topo")
        resolve_pipeline(args.pipeline or "O0")
    elif args.target is None and settings.target is not None:  # a case found against a target runs on it, as replay runs it
        settings.check()
        note_recorded(args, settings)
        args.target = settings.target
    elif args.target is None:
        settings.check()
        resolve_scheduler(settings.scheduler)
        resolve_pipeline(settings.pipeline)
        note_recorded(args, settings)
    found = violations(graph)
    for v in found:
        names = f" [{', '.join(v.names)}]" if v.names else ""
        print(f"{args.graph}: {v.invariant}: {v.detail}{names}")
    if found:
        return 1
    args.runs_given, args.runs = args.runs is not None, args.runs or 1
    _check_runs(graph, args.runs if args.runs_given or args.target is None else run_target.DEFAULT_RUNS)
    inputs = _inputs(graph, args.inputs, settings)
    if args.target is not None:
        return run_target.run(args, graph, inputs)
    try:
        values = _reference(graph, inputs, args.runs) if args.reference else _compiled(graph, inputs, args, settings)
    except ExecutionError as e:
        raise ExecutionError(f"{args.graph}: {e}", node=e.node) from None
    except InvariantViolation as e:  # from compiling: a user's scheduler, a pass, a mutant
        raise in_file(args.graph, e) from None
    if args.out is not None:
        _write(args.out, values)
        if args.out == "-":
            return 0
        print(f"{args.graph}: wrote {len(values)} arrays after {_runs(args.runs)} to {args.out}")
    else:
        how = "reference" if args.reference else "compiled"
        print(f"{args.graph}: {how}, after {_runs(args.runs)}:")
        print(values_text(graph, values), end="")
    return 0


def _check_runs(graph: Graph, runs: int) -> None:
    """``LimitExceeded`` (exit 2, before the first run) for more runs than
    ``REFC_MAX_RUNS``, or runs that together touch more bytes than
    ``REFC_MAX_RUN_BYTES``: a run is bounded by the graph's limits, so the
    runs are what could keep ``refc run`` going for days."""
    from refcompiler import limits
    from refcompiler.verifier import graph_bytes, infer_types

    limits.check("runs", runs, "--runs")
    each = graph_bytes(graph, infer_types(graph))
    limits.check("run_bytes", runs * each, f"--runs {runs} of {each} bytes each")


def _runs(n: int) -> str:
    return "1 run" if n == 1 else f"{n} runs"


def _inputs(graph: Graph, path: str | None, settings: Settings) -> dict[str, np.ndarray] | None:
    """A case's input values, then the ``--inputs`` overrides, checked against
    the graph's storage (exit 2 naming file and key)."""
    from refcompiler.values import bind_inputs, load_npz

    recorded = dict(settings.inputs)
    if path is None:
        return recorded or None
    overrides = load_npz(path)
    bind_inputs(graph, overrides, path=path)
    return {**recorded, **overrides}


def _reference(graph: Graph, inputs: dict[str, np.ndarray] | None, runs: int) -> Values:
    from refcompiler.reference import run_reference

    return run_reference(graph, inputs, runs=runs)


def _compiled(graph: Graph, inputs: dict[str, np.ndarray] | None, args: argparse.Namespace, settings: Settings) -> Values:
    from refcompiler.driver import run_compiled
    from refcompiler.mutants import activate

    compiled = compile_from_args(graph, args, settings)
    with activate(settings.mutant):  # the case's mutant: around the compiler, not the reference
        return run_compiled(compiled, inputs, runs=args.runs)


def _write(path: str, values: Values) -> None:
    from refcompiler.values import save_npz, write_npz

    if path == "-":
        sys.stdout.flush()
        write_npz(sys.stdout.buffer, values)
        sys.stdout.buffer.flush()
        return
    try:
        save_npz(path, values)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None
