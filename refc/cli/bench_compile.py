"""``refc bench --compile``: compile time against graph size.

On graphs from ``refcompiler.proofs.scale.large_graph`` (valid, with saves,
views and owned state) of 1k, 2k, 4k, 8k and 16k nodes (``--compile-sizes``),
in one process: the CPU seconds loading the graph's file text takes (parsing
the JSON, checking it against the schema, building the graph: what every
command does before its work), the CPU seconds ``compile_graph`` takes at O0 and at O2 (the
best of ``--compile-repeat`` runs, default 3: on a shared machine one run can
take twice as long as the next, which makes the growth exponent noise), the
CPU seconds the reference interpreter takes to
run the same graph once (each compile and run on a fresh copy of the graph
object, as a command meets a graph it has just loaded), the ratio of each compile time to that, and the
growth exponent of each series: the slope of the least-squares line through
(log nodes, log seconds), first size to last.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
from typing import Any, Callable

from refc.cli.common import size_list, whole_number

__all__ = ["add_arguments", "measure", "render", "growth_exponent"]

DEFAULT_SIZES = (1_000, 2_000, 4_000, 8_000, 16_000)
PIPELINES = ("O0", "O2")
MAX_REPEAT = 100  # each compiles every size under every pipeline again


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("compile section")
    g.add_argument("--compile-sizes", type=size_list("1000,2000"), default=DEFAULT_SIZES, metavar="N,N,...",
                   help="graph sizes in nodes (default 1000,2000,4000,8000,16000)")
    g.add_argument("--compile-repeat", type=whole_number(1, MAX_REPEAT), default=3, metavar="N",
                   help=f"time each compile N times and keep the best (default 3, at most {MAX_REPEAT})")


def _best(repeat: int, run: Callable[[], object]) -> float:
    """The least CPU time of this process over ``repeat`` calls of ``run``
    (CPU, not wall: other processes on the machine do not count)."""
    best = math.inf
    for _ in range(repeat):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def growth_exponent(points: list[tuple[int, float]]) -> float | None:
    """Slope of the least-squares line through ``(log n, log seconds)``; ``None``
    with fewer than two distinct sizes or a time of zero."""
    usable = [(math.log(n), math.log(s)) for n, s in points if s > 0]
    if len({x for x, _ in usable}) < 2:
        return None
    mx = sum(x for x, _ in usable) / len(usable)
    my = sum(y for _, y in usable) / len(usable)
    sxx = sum((x - mx) ** 2 for x, _ in usable)
    return sum((x - mx) * (y - my) for x, y in usable) / sxx


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from refcompiler.driver import compile_graph
    from refcompiler.graph_json import graph_from_doc, graph_to_doc
    from refcompiler.proofs.scale import large_graph
    from refcompiler.reference import run_reference

    warm = large_graph(20)  # imports and first-use set-up stay out of the figures
    compile_graph(warm, pipeline="O2")
    run_reference(warm)
    rows = []
    for n in args.compile_sizes:
        graph = large_graph(n)
        row: dict[str, Any] = {"nodes": n}
        text = json.dumps(graph_to_doc(graph))
        row["load_seconds"] = round(_best(args.compile_repeat, lambda: graph_from_doc(json.loads(text), path=None)), 6)
        row["reference_seconds"] = round(_best(args.compile_repeat, lambda: run_reference(dataclasses.replace(graph))), 6)
        for pipeline in PIPELINES:
            # a fresh graph object each time, as a command compiles a graph it has just loaded: the
            # same object again would find its tables made and the verifier's verdict remembered
            seconds = _best(args.compile_repeat, lambda: compile_graph(dataclasses.replace(graph), pipeline=pipeline))
            row[pipeline] = {
                "seconds": round(seconds, 6),
                "over_reference": round(seconds / max(row["reference_seconds"], 1e-9), 2),
            }
        rows.append(row)
    exponents = {}
    for pipeline in ("load", *PIPELINES, "reference"):
        key = (lambda r, p=pipeline: r[p]["seconds"]) if pipeline in PIPELINES else (lambda r, p=pipeline: r[f"{p}_seconds"])
        found = growth_exponent([(r["nodes"], key(r)) for r in rows])
        exponents[pipeline] = None if found is None else round(found, 3)
    return {"graphs": rows, "growth_exponent": exponents}


def render(data: dict[str, Any]) -> str:
    table = [("nodes", "load s", "O0 s", "O2 s", "reference s", "O0/reference", "O2/reference")]
    for r in data["graphs"]:
        table.append((
            str(r["nodes"]),
            f"{r['load_seconds']:.3f}",
            f"{r['O0']['seconds']:.3f}",
            f"{r['O2']['seconds']:.3f}",
            f"{r['reference_seconds']:.3f}",
            f"{r['O0']['over_reference']:.1f}x",
            f"{r['O2']['over_reference']:.1f}x",
        ))
    widths = [max(len(row[k]) for row in table) for k in range(len(table[0]))]
    lines = ["compile: loading the graph's JSON text, and compile_graph, on generated graphs (refcompiler.proofs.scale), one process"]
    lines += ["  " + "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in table]
    fits = ", ".join(f"{p} {'-' if e is None else f'{e:.2f}'}" for p, e in data["growth_exponent"].items())
    sizes = [r["nodes"] for r in data["graphs"]]
    span = f"{sizes[0]} to {sizes[-1]} nodes" if sizes else "no sizes"
    lines.append(f"  growth exponent (log-log least squares, {span}): {fits}")
    return "\n".join(lines) + "\n"
