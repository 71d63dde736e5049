"""``refc mutants [--json]``: the mutant catalog (DESIGN §9).

``refc mutants --score [--budget SECONDS] [--seeds K] [--json]`` measures the
suite against each mutant: K campaigns with one worker (seeds 0..K-1), each
stopping at its first kill; a mutant is killed when every campaign kills it.
It reports the median time to the first failing case and the size of the
shrunk case, beside the goals (a median under 3 s, at most 5 nodes). Exit 0 when every
mutant is killed, 1 when one survives.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import signal
import statistics
import sys
import threading
from typing import Any, Iterator

from refc.cli.common import positive_seconds, whole_number
from refcompiler.errors import UsageError

# what a score is held to: the median time to kill, and every shrunk case's size
GOAL_SECONDS = 3.0
GOAL_NODES = 5
MAX_SEEDS = 1000  # campaigns per mutant: each takes up to --budget seconds, for every mutant


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mutants", help="list the mutants (deliberately wrong compilers), or score the suite against them")
    p.add_argument("--json", action="store_true", help="print JSON: the catalog as a list, or the score as {\"mutants\": [...]}")
    p.add_argument("--score", action="store_true", help="run a campaign per mutant and report how fast each is killed")
    p.add_argument("--budget", type=positive_seconds, default=None, metavar="SECONDS", help="time per campaign (default 10)")
    p.add_argument("--seeds", type=whole_number(1, MAX_SEEDS), default=None, metavar="K", help=f"campaigns per mutant, seeds 0..K-1 (default 1, at most {MAX_SEEDS})")
    p.add_argument("--only", metavar="NAME", action="append", default=None, help="score only this mutant (repeatable)")
    p.set_defaults(func=run)


def catalog_rows() -> list[dict[str, str]]:
    from refcompiler.mutants import CATALOG

    return [
        {"name": m.name, "component": m.component, "bug_class": m.bug_class, "description": m.description}
        for m in CATALOG.values()
    ]


def run(args: argparse.Namespace) -> int:
    from refc.cli.tables import table_lines

    if args.score:
        args.budget = 10.0 if args.budget is None else args.budget
        args.seeds = 1 if args.seeds is None else args.seeds
        return _score(args)
    for flag, given in (("--only", args.only), ("--budget", args.budget), ("--seeds", args.seeds)):
        if given is not None:  # without --score it would be ignored
            raise UsageError(f"{flag} sets how --score scores the mutants; add --score")
    rows = catalog_rows()
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for line in table_lines(("name", "component", "what is wrong"), [(r["name"], r["component"], r["description"]) for r in rows]):
        print(line)
    return 0


def score(name: str, *, budget: float, seeds: int) -> dict[str, Any]:
    """One mutant's score over ``seeds`` single-worker campaigns."""
    from fuzz.campaign import score_mutant

    runs = [score_mutant(name, budget=budget, seed=seed, workers=1) for seed in range(seeds)]
    each = [k.seconds if k.failure is not None else None for k in runs]  # None: it survived
    kills = [k for k, t in zip(runs, each) if t is not None]
    # a campaign that survived counts as slower than any kill
    median = statistics.median(sorted(math.inf if t is None else t for t in each))
    nodes = [k.failure.nodes for k in kills if k.failure is not None]
    best = min(kills, key=lambda k: (k.failure.nodes, k.seconds)) if kills else None  # type: ignore[union-attr]
    return {
        "name": name,
        "killed": len(kills) == len(runs),
        "kills": len(kills),
        "campaigns": len(runs),
        "seconds_to_kill": None if math.isinf(median) else round(median, 3),
        "shrunk_nodes": None if not nodes else int(statistics.median_low(nodes)),
        "shrunk_nodes_max": None if not nodes else max(nodes),
        "seconds_each": [None if t is None else round(t, 3) for t in each],
        "cases_to_kill": [k.cases for k in runs],
        "signature": None if best is None or best.failure is None else str(best.failure.signature),
        "case": None if best is None or best.failure is None else best.failure.case_doc,
    }


@contextlib.contextmanager
def _between_campaigns_too() -> Iterator[None]:
    """SIGINT and SIGTERM stop a score between two of its campaigns as they do
    inside one (each campaign puts its own handlers in place and restores
    these): without this, a SIGTERM in the gap met the default action and
    killed refc with no word."""
    def stop(signum: int, frame: object) -> None:
        raise ScoreInterrupted(signal.Signals(signum).name)

    from fuzz.campaign.score import ScoreInterrupted

    if threading.current_thread() is not threading.main_thread():  # no handlers there
        yield
        return
    saved = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def _score(args: argparse.Namespace) -> int:
    from refcompiler.mutants import CATALOG, get

    names = list(dict.fromkeys(get(n).name for n in args.only)) if args.only else list(CATALOG)  # each scored once
    results = []
    from fuzz.campaign.score import ScoreInterrupted

    name = names[0]
    try:
        with _between_campaigns_too():
            for name in names:
                row = score(name, budget=args.budget, seeds=args.seeds)
                results.append(row)
                if not args.json:  # progress: a score takes a campaign per mutant
                    print(f"refc mutants: {_status(row)}", file=sys.stderr, flush=True)
    except ScoreInterrupted as e:
        print(f"refc mutants: interrupted by {e.signal_name} while scoring {name} ({len(results)} of {len(names)} mutants scored)", file=sys.stderr)
        return 143 if e.signal_name == "SIGTERM" else 130
    survivors = [r["name"] for r in results if not r["killed"]]
    if args.json:
        print(json.dumps({"budget": args.budget, "seeds": args.seeds, "mutants": results}, indent=1))
    else:
        for line in _score_table(results):
            print(line)
        # a survivor misses both goals: it was never killed, so never in time
        slow = [r["name"] for r in results if not r["killed"] or r["seconds_to_kill"] > GOAL_SECONDS]
        big = [r["name"] for r in results if r["killed"] and r["shrunk_nodes_max"] > GOAL_NODES]
        print(
            f"{len(results) - len(survivors)}/{len(results)} mutants killed"
            f"; goals (median < {GOAL_SECONDS:g} s, every shrunk case <= {GOAL_NODES} nodes) missed by: "
            + (", ".join(sorted(set(slow) | set(big))) or "none")
        )
        if survivors:
            print("survived: " + ", ".join(survivors))
    return 1 if survivors else 0


def _status(row: dict[str, Any]) -> str:
    if not row["killed"]:
        return f"{row['name']} SURVIVED {row['campaigns'] - row['kills']}/{row['campaigns']} campaigns"
    return f"{row['name']} killed in {row['seconds_to_kill']:.2f} s"


def _score_table(results: list[dict[str, Any]]) -> list[str]:
    from refc.cli.tables import table_lines

    header = ("mutant", "killed", "seconds to kill (median)", "shrunk nodes (median, max)", "signature")
    rows = [
        (
            r["name"],
            f"{r['kills']}/{r['campaigns']}",
            "-" if r["seconds_to_kill"] is None else f"{r['seconds_to_kill']:.2f}",
            "-" if r["shrunk_nodes"] is None else f"{r['shrunk_nodes']}, {r['shrunk_nodes_max']}",
            r["signature"] or "-",
        )
        for r in results
    ]
    return table_lines(header, rows)
