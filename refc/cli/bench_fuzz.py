"""``refc bench --fuzz``: campaign throughput with one worker, with two and with
all cores, side by side in one run.

The same campaign on the reference compiler (``--fuzz-budget`` seconds,
``--fuzz-seed``) runs with each worker count in turn, and the whole turn is
repeated ``--fuzz-rounds`` times, so that a slow spell of a shared machine
falls on every worker count alike rather than on one of them. A row is the
median round of its worker count (by schedules per second); its ratios are
the medians of the rounds' own ratios to the one worker of the same round.
Beside wall-clock rates, each campaign's schedules per CPU second (its
process's CPU time and its reaped workers'): the figure per core that time
stolen by other machines does not move.
"""

from __future__ import annotations

import argparse
import os
import statistics
from typing import Any

from refc.cli.common import positive_seconds, whole_number

MAX_ROUNDS = 100  # each round runs a campaign of --fuzz-budget seconds per worker count

__all__ = ["SECTION_ARGS", "add_arguments", "measure", "render"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("fuzz section")
    g.add_argument("--fuzz-budget", type=positive_seconds, default=10.0, metavar="SECONDS", help="seconds per campaign (default 10)")
    g.add_argument("--fuzz-seed", type=whole_number(0), default=0, metavar="N", help="campaign seed (default 0)")
    g.add_argument(
        "--fuzz-rounds", type=whole_number(1, MAX_ROUNDS), default=3, metavar="N",
        help=f"times every worker count's campaign runs, in turn; rows are medians (default 3, at most {MAX_ROUNDS})"
    )


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its children that were reaped."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _campaign(args: argparse.Namespace, workers: int) -> dict[str, Any]:
    from fuzz.campaign import CampaignConfig, run_campaign

    config = CampaignConfig(budget=args.fuzz_budget, seed=args.fuzz_seed, workers=workers, out=None)
    cpu = _cpu_seconds()
    summary = run_campaign(config)  # a pool's workers are reaped when it ends
    cpu = _cpu_seconds() - cpu
    cps, sps = summary.rates()
    return {
        "workers": workers,
        "cases": summary.cases,
        "schedules": summary.schedules,
        "failures": summary.failures,
        "seconds": round(summary.seconds, 3),
        "cpu_seconds": round(cpu, 3),
        "cases_per_second": round(cps, 2),
        "schedules_per_second": round(sps, 2),
        "schedules_per_cpu_second": round(summary.schedules / max(cpu, 1e-9), 2),
        "seconds_by_stage": summary.time_shares(),
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Every worker count's campaign (one, two, all cores) in turn, ``--fuzz-rounds``
    times; per worker count, its median round and the medians of its ratios."""
    from fuzz.campaign import default_workers

    counts = sorted({1, 2, default_workers()})
    rounds = [[_campaign(args, w) for w in counts] for _ in range(args.fuzz_rounds)]
    rows = []
    for i in range(len(counts)):
        runs = [r[i] for r in rounds]
        speed = statistics.median(r[i]["cases_per_second"] / max(r[0]["cases_per_second"], 1e-9) for r in rounds)
        schedules = statistics.median(r[i]["schedules_per_second"] / max(r[0]["schedules_per_second"], 1e-9) for r in rounds)
        middle = statistics.median_low(r["schedules_per_second"] for r in runs)
        row = dict(next(r for r in runs if r["schedules_per_second"] == middle))
        row.update(speedup=round(speed, 2), schedules_speedup=round(schedules, 2), rounds=[_round_figures(r) for r in runs])
        rows.append(row)
    return {"budget": args.fuzz_budget, "seed": args.fuzz_seed, "rounds": args.fuzz_rounds, "campaigns": rows}


def _round_figures(run: dict[str, Any]) -> dict[str, Any]:
    keys = ("cases", "schedules", "seconds", "cpu_seconds", "schedules_per_second", "schedules_per_cpu_second")
    return {k: run[k] for k in keys}


def render(data: dict[str, Any]) -> str:
    from refc.cli.tables import table_lines

    table = [("workers", "cases", "schedules", "failures", "seconds", "cases/s", "schedules/s", "schedules/CPU s", "cases ratio", "schedules ratio")]
    for r in data["campaigns"]:
        table.append(
            (
                str(r["workers"]),
                str(r["cases"]),
                str(r["schedules"]),
                str(r["failures"]),
                f"{r['seconds']:.1f}",
                f"{r['cases_per_second']:.1f}",
                f"{r['schedules_per_second']:.1f}",
                f"{r['schedules_per_cpu_second']:.1f}",
                f"{r['speedup']:.2f}x",
                f"{r['schedules_speedup']:.2f}x",
            )
        )
    rounds = data["rounds"]
    median = f"the median of {rounds} rounds, run in turn" if rounds > 1 else "one round"
    head = f"fuzz: campaigns on the reference compiler, {data['budget']:g} s each, seed {data['seed']}, side by side ({median})"
    spread = [
        f"  {r['workers']} worker{'s' if r['workers'] > 1 else ''}: schedules/s "
        + ", ".join(f"{x['schedules_per_second']:.1f}" for x in r["rounds"])
        for r in data["campaigns"]
    ] if rounds > 1 else []
    one = data["campaigns"][0]
    label = {"compile": "compile and run"}  # the stage runs what it compiled, under the sanitizer
    shares = ", ".join(f"{label.get(k, k)} {v['share']:.0%}" for k, v in one["seconds_by_stage"].items() if v["share"] >= 0.005)
    where = f"where {one['workers']} worker's time went (oracle stages, deriving schedules, generating cases): {shares}"
    lines = [head, *table_lines(table[0], table[1:], right=True, indent=2)]
    if spread:  # a row's figures and its ratios come from different rounds when the machine's load changed between them
        lines += ["ratios: the median of each round's own ratio to its 1-worker campaign; each row: its median round", "each round:", *spread]
    return "\n".join([*lines, where]) + "\n"


SECTION_ARGS = ("fuzz", "fuzzing throughput with one worker, two and all", add_arguments, measure, render)
