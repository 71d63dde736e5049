"""``refc bench --target``: graphs per second through an external compiler.

The same generated graphs (``fuzz.strategies.valid.graphs``, derandomised, at most
``--max-nodes`` nodes) go through the target's oracle chain (verify, reference, the
target stage with every configuration, two runs each) in this process, one core;
``--target-name`` names the target (default ``onnxruntime``: all 32
configurations; ``onnxruntime-pairs``: 8). Reported: graphs, refused graphs,
configurations run, findings by invariant, seconds, graphs per second (all, and
those the target did not refuse).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from typing import Any

from refcompiler.targets import BUILTIN
from refc.cli.common import whole_number

MAX_GRAPHS = 100_000  # each runs through every configuration of the target, in a child process

__all__ = ["SECTION_ARGS", "add_arguments", "measure", "render"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("target section")
    g.add_argument("--target-name", metavar="NAME", default="onnxruntime", help=f"the target: {', '.join(BUILTIN)}, or module:attribute (default onnxruntime)")
    g.add_argument("--target-graphs", type=whole_number(1, MAX_GRAPHS), default=100, metavar="N", help=f"graphs to run (default 100, at most {MAX_GRAPHS})")


def _graphs(n: int, max_nodes: int) -> list[Any]:
    from hypothesis import HealthCheck, given, settings

    from fuzz.strategies.valid import graphs

    out: list[Any] = []

    @settings(max_examples=n, database=None, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(graphs(max_nodes=max_nodes))
    def collect(g: Any) -> None:
        out.append(g)

    collect()
    return out[:n]


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from fuzz.oracle import check_case
    from refcompiler.targets import resolve_target
    from refcompiler.targets.base import Refused

    target = resolve_target(args.target_name)
    graphs = _graphs(args.target_graphs, 10)
    check_case(graphs[0], compiler=args.target_name, isolate=False)  # imports and first sessions out of the timing
    findings: Counter[str] = Counter()
    start = time.perf_counter()
    for g in graphs:
        f = check_case(g, compiler=args.target_name, isolate=False).finding
        if f is not None:
            findings[f.signature.invariant] += 1
    seconds = time.perf_counter() - start
    refused = sum(isinstance(target.build(g), Refused) for g in graphs)
    configs = len(target.configurations())
    return {
        "target": args.target_name,
        "graphs": len(graphs),
        "refused": refused,
        "configurations": configs,
        "configuration_runs": (len(graphs) - refused) * configs,
        "findings": dict(findings),
        "seconds": round(seconds, 3),
        "graphs_per_second": round(len(graphs) / seconds, 2),
        "compiled_graphs_per_second": round((len(graphs) - refused) / seconds, 2),
    }


def render(d: dict[str, Any]) -> str:
    found = ", ".join(f"{k}: {v}" for k, v in sorted(d["findings"].items())) or "none"
    return (
        f"target: {d['target']}, {d['graphs']} graphs ({d['refused']} refused) x {d['configurations']} configurations, one core: "
        f"{d['seconds']:.1f} s, {d['graphs_per_second']:.1f} graphs/s ({d['compiled_graphs_per_second']:.1f} not refused); findings {found}\n"
    )


SECTION_ARGS = ("target", "graphs per second through an external compiler (--target-name, default onnxruntime)", add_arguments, measure, render)
