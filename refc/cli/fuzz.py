"""``refc fuzz``: a fuzzing campaign against the compiler (DESIGN §8).

Generates random valid graphs (and a share of graphs that break one
invariant), checks each with the oracle chain under several schedules, ``O0``
and the pipeline, shrinks every new failure, and writes ``DIR/summary.json``,
``DIR/junit.xml`` and ``DIR/cases/<signature>.json`` (one shrunk corpus case
per distinct failure signature). Exit 0 when nothing failed, 1 when
something did, 2 for bad usage.

``--max-cases`` bounds the campaign by count (then, without ``--budget``,
nothing depends on time: one worker and one seed give one summary, timings
aside); ``--budget`` by seconds (default 60 without ``--max-cases``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from refcompiler.errors import UsageError
from refc.cli.common import locked_out, out_dir, positive_seconds, whole_number, worker_count


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fuzz", help="run a fuzzing campaign; write a summary, JUnit XML and shrunk cases")
    p.add_argument("--budget", type=positive_seconds, default=None, metavar="SECONDS",
                   help="stop after this many seconds (default 60, or none with --max-cases)")
    p.add_argument("--max-cases", type=whole_number(1), default=None, metavar="N", help="stop after N generated cases")
    p.add_argument("--seed", type=whole_number(0), default=0, metavar="N", help="campaign seed (default 0)")
    p.add_argument("--workers", type=whole_number(1), default=None, metavar="N",
                   help="worker processes (default: all cores; at most the cores available); 1 runs in this process")
    p.add_argument("--force-workers", action="store_true", help="allow --workers above the cores available")
    # dest differs from --mutant of other commands: the oracle installs the
    # mutant around the compiler only, never around the reference
    p.add_argument("--mutant", dest="fuzz_mutant", metavar="NAME", default=None,
                   help="fuzz a deliberately wrong compiler (see `refc mutants`)")
    p.add_argument("--scheduler", metavar="SPEC", default=None,
                   help="the scheduler under test: topo, memory, random, or module:attribute "
                        "(default: every built-in one)")
    p.add_argument("--pipeline", metavar="SPEC", default="O2",
                   help="the pipeline under test, checked beside O0: O2, pass names, or module:attribute (default O2)")
    p.add_argument("--max-nodes", type=whole_number(1), default=10, metavar="N", help="largest generated graph (default 10)")
    p.add_argument("--out", metavar="DIR", default="fuzz-out", help="output directory (default fuzz-out/)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fuzz.campaign import CampaignConfig, PlainProgress, RichProgress, default_workers, run_campaign, write_outputs
    from refcompiler.mutants import get as get_mutant
    from refcompiler.passes import resolve_pipeline
    from refcompiler.schedulers import SCHEDULERS, resolve_scheduler

    # Fail fast, in this process, on names a worker could not resolve.
    if args.fuzz_mutant is not None:
        get_mutant(args.fuzz_mutant)
    if args.scheduler is not None:
        resolve_scheduler(args.scheduler)
    resolve_pipeline(args.pipeline)
    workers = worker_count(args.workers, force=args.force_workers)
    out = Path(args.out)
    out_dir(args.out)
    budget = args.budget if args.budget is not None or args.max_cases is not None else 60.0
    config = CampaignConfig(
        budget=budget,
        max_cases=args.max_cases,
        seed=args.seed,
        workers=workers or default_workers(),
        mutant=args.fuzz_mutant,
        schedulers=(args.scheduler,) if args.scheduler else tuple(SCHEDULERS),
        pipeline=args.pipeline,
        out=out,
        max_nodes=args.max_nodes,
    )
    progress = RichProgress(sys.stderr) if sys.stderr.isatty() else PlainProgress(sys.stderr)
    with locked_out(args.out):
        summary = run_campaign(config, progress=progress)
        try:
            write_outputs(summary, out)
        except OSError as e:  # e.g. a link planted in the directory, which is never followed
            raise UsageError(f"cannot write {e.filename or out}: {e.strerror or e}") from None
    doc = summary.to_doc()
    print(
        f"refc fuzz: {doc['cases']} cases ({doc['cases_per_second']}/s), {doc['schedules']} schedules "
        f"({doc['schedules_per_second']}/s) in {doc['seconds']:.1f}s; {doc['failures']} failing, "
        f"{doc['distinct_failures']} distinct; wrote {out / 'summary.json'}"
    )
    for entry in doc["signatures"]:
        print(f"  {entry['text']}: {entry['explanation']}")
        print(f"    case {out / entry['case']} ({entry['nodes']} nodes); replay: refc replay {out / entry['case']}"
              + (f" --mutant {config.mutant}" if config.mutant else ""))
    return 1 if summary.failed else 0
