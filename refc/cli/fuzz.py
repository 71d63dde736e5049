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
from refc.cli import fuzz_target
from refc.cli.common import positive_seconds, whole_number


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fuzz", help="run a fuzzing campaign; write a summary, JUnit XML and shrunk cases")
    p.add_argument("--budget", type=positive_seconds, default=None, metavar="SECONDS",
                   help="stop after this many seconds (default 60, or none with --max-cases)")
    p.add_argument("--max-cases", type=whole_number(1), default=None, metavar="N", help="stop after N generated cases")
    p.add_argument("--seed", type=whole_number(0), default=0, metavar="N", help="campaign seed (default 0)")
    p.add_argument("--workers", type=whole_number(1), default=None, metavar="N",
                   help="worker processes (default: all cores); 1 runs in this process")
    # dest differs from --mutant of other commands: the oracle installs the
    # mutant around the compiler only, never around the reference
    p.add_argument("--mutant", dest="fuzz_mutant", metavar="NAME", default=None,
                   help="fuzz a deliberately wrong compiler (see `refc mutants`)")
    p.add_argument("--scheduler", metavar="SPEC", default=None,
                   help="the scheduler under test: topo, memory, random, or module:attribute "
                        "(default: every built-in one)")
    p.add_argument("--pipeline", metavar="SPEC", default="O2",
                   help="the pipeline under test, checked beside O0: O2, pass names, or module:attribute (default O2)")
    p.add_argument("--symbolic", choices=("auto", "on", "off"), default="auto",
                   help="symbolic translation validation of every distinct compiled program: "
                        "auto (default) validates graphs of at most 40 nodes and 1,024 storage elements")
    p.add_argument("--max-nodes", type=whole_number(1), default=10, metavar="N", help="largest generated graph (default 10)")
    p.add_argument("--out", metavar="DIR", default="fuzz-out", help="output directory (default fuzz-out/)")
    p.add_argument("--target", metavar="NAME", default=None,
                   help="fuzz an external compiler instead of refc's: onnxruntime, or module:attribute; "
                        "each finding also gets a bug folder OUT/bugs/<signature>/")
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
    fuzz_target.check_target(args.target)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {args.out}: exists and is not a directory")
    budget = args.budget if args.budget is not None or args.max_cases is not None else 60.0
    config = CampaignConfig(
        budget=budget,
        max_cases=args.max_cases,
        seed=args.seed,
        workers=args.workers or default_workers(),
        mutant=args.fuzz_mutant,
        schedulers=(args.scheduler,) if args.scheduler else tuple(SCHEDULERS),
        pipeline=args.pipeline,
        out=out,
        max_nodes=args.max_nodes,
        symbolic={"auto": None, "on": True, "off": False}[args.symbolic],
        target=args.target,
        # a target is checked on valid graphs; invalid ones test refc's verifier only
        **({"invalid_share": 0.0} if args.target else {}),
    )
    progress = RichProgress(sys.stderr) if sys.stderr.isatty() else PlainProgress(sys.stderr)
    summary = run_campaign(config, progress=progress)
    write_outputs(summary, out)
    doc = summary.to_doc()
    print(
        f"refc fuzz: {doc['cases']} cases ({doc['cases_per_second']}/s), {doc['schedules']} schedules "
        f"({doc['schedules_per_second']}/s) in {doc['seconds']:.1f}s; {doc['failures']} failing, "
        f"{doc['distinct_failures']} distinct; wrote {out / 'summary.json'}"
    )
    bugs = fuzz_target.write_bugs(doc, out, args.target)
    for entry in doc["signatures"]:
        print(f"  {entry['text']}: {entry['explanation']}")
        print(f"    case {out / entry['case']} ({entry['nodes']} nodes); replay: refc replay {out / entry['case']}"
              + (f" --mutant {config.mutant}" if config.mutant else ""))
    for folder in bugs:
        print(f"  bug folder {folder}: python {folder / 'repro.py'}")
    return 1 if summary.failed else 0
