"""``refc run G --target NAME [--config KEY]``: a graph through an external compiler.

Every configuration of the target (or only ``--config KEY``) runs ``--runs`` runs
(default 2 with a target), carrying placeholders and owned state; one line per
configuration gives the checksum of each storage the runs write (equal checksums,
equal bits), then the verdict of ``refcompiler.targets.verdict.judge`` against the
other configurations and the reference: exit 0 when they agree, 1 with the
discrepancy, 2 for an unknown target or key, or a missing package (the pip command).
A target runs in a child process, so its crash is a result, not refc's.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Mapping

from refcompiler.errors import UsageError
from refcompiler.targets import BUILTIN

if TYPE_CHECKING:
    import numpy as np

    from refcompiler.graph import Graph

__all__ = ["add_arguments", "run"]


DEFAULT_RUNS = 2  # runs of each configuration without --runs: the second sees the state the first left


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", metavar="NAME", default=None, help=f"run on an external compiler instead: {', '.join(BUILTIN)}, or module:attribute")
    p.add_argument("--config", metavar="KEY", default=None, help="with --target, or a case found against a target: only this configuration (default: every one)")


def run(args: argparse.Namespace, graph: Graph, inputs: Mapping[str, np.ndarray] | None) -> int:
    from refcompiler.printer import checksum
    from refcompiler.reference import run_reference
    from refcompiler.targets import resolve_target
    from refcompiler.targets.base import written_storage
    from refcompiler.targets.isolate import run_target
    from refcompiler.targets.verdict import judge
    from refcompiler.values import bind_inputs

    target = resolve_target(args.target)
    keys = [c.key for c in target.configurations()]
    if args.config is not None and args.config not in keys:
        raise UsageError(f"--config {args.config!r}: target {args.target} has the configurations {', '.join(keys)}")
    runs = args.runs if args.runs_given else DEFAULT_RUNS
    entry = bind_inputs(graph, inputs or {})
    outcome = run_target(args.target, target, graph, entry, isolate=True, runs=runs)
    if outcome.refused is not None:
        print(f"{args.graph}: {args.target} refuses the graph: {outcome.refused}")
        return 0
    if args.config is not None and outcome.results:
        outcome.results = [r for r in outcome.results if r.config.key == args.config]
    names = written_storage(graph)
    print(f"{args.graph}: {args.target}, {len(outcome.results)} configurations, after {runs} runs (sha256 of {', '.join(names)}):")
    for r in outcome.results:
        sums = " ".join(checksum(r.runs[-1][s]) for s in names) if len(r.runs) == runs else "-"
        print(f"  {r.config.key}: {sums}" + (f"  error: {r.error}" if r.error else ""))
    reference, values = [], entry
    for _ in range(runs):
        values = run_reference(graph, values)
        reference.append(values)
    print(f"  reference: {' '.join(checksum(reference[-1][s]) for s in names)}")
    d = judge(graph, outcome, reference)
    if d is None:
        print(f"{args.graph}: agrees (configurations with each other, and with the reference within the per-op bounds)")
        return 0
    print(f"{args.graph}: {d.invariant} {d.kind.value}: {d.detail}")
    return 1
