"""``refc bench``: measurements, one section per part of the suite.

``refc bench`` runs every section; ``refc bench --proofs`` (or any other
section's flag) only the ones named. Each section is a ``Section`` in
``SECTIONS``: a flag name, its own options, a ``measure(args) -> dict`` and a
``render(dict) -> str``. With ``--json`` the output is one object keyed by
section name; otherwise each section prints a table. Add a section by
appending to ``SECTIONS``.

Section ``fuzz``: see ``refc.cli.bench_fuzz``.

Section ``compile``: see ``refc.cli.bench_compile``.

Section ``proofs`` (DESIGN §4, §7.2): on graphs from
``refcompiler.proofs.scale.large_graph`` of n = 10, 100, 1,000, 10,000 nodes
(``--sizes``), the seconds for ``prove`` with reach, with z3, with both, and
with enumeration of every legal order where that is feasible (up to
``--enumerate-max-nodes`` nodes and ``--enumerate-limit`` orders), measured
side by side in one process, with the ratios to reach; and, on small compiled
programs, the allocator's peak bytes beside the Z3-optimal peak.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from refc.cli import bench_compile, bench_fuzz, bench_onnx, bench_target, bench_validate
from refc.cli.common import positive_seconds, size_list, whole_number
from refcompiler.errors import UsageError

if TYPE_CHECKING:
    from refcompiler.graph import Graph

__all__ = ["Section", "SECTIONS", "register", "run"]


@dataclass(frozen=True)
class Section:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    measure: Callable[[argparse.Namespace], dict[str, Any]]
    render: Callable[[dict[str, Any]], str]


# -- section "proofs" -----------------------------------------------------------------

DEFAULT_SIZES = (10, 100, 1_000, 10_000)
ALLOC_SIZES = (100, 200)


def _proof_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("proofs section")
    g.add_argument("--sizes", type=size_list("10,100"), default=DEFAULT_SIZES, metavar="N,N,...", help="graph sizes (default 10,100,1000,10000)")
    g.add_argument("--graph-seed", type=whole_number(0), default=0, metavar="N", help="seed of the generated graphs (default 0)")
    g.add_argument(
        "--enumerate-max-nodes", type=whole_number(0), default=16, metavar="N", help="enumerate legal orders only up to N nodes (default 16)"
    )
    g.add_argument("--enumerate-limit", type=whole_number(0), default=500_000, metavar="N", help="stop enumerating after N orders (default 500000)")
    g.add_argument("--alloc-timeout", type=positive_seconds, default=20.0, metavar="SECONDS", help="Z3 time limit per optimal peak (default 20)")


def _timed_prove(graph: Any, engine: str) -> tuple[float, str, int]:
    from refcompiler.proofs import prove

    start = time.perf_counter()
    proof = prove(graph, engine=engine)
    return time.perf_counter() - start, proof.verdict.value, proof.pairs_checked


def _measure_proofs(args: argparse.Namespace) -> dict[str, Any]:
    from refcompiler.proofs import prove
    from refcompiler.proofs.scale import large_graph

    # Z3 sets itself up on first use; keep that out of the first measurement.
    prove(large_graph(3), engine="both")
    rows = []
    for n in args.sizes:
        graph = large_graph(n, seed=args.graph_seed)
        row: dict[str, Any] = {"nodes": n, "storage": len(graph.storage)}
        for engine in ("reach", "z3", "both"):
            seconds, verdict, pairs = _timed_prove(graph, engine)
            row[engine] = {"seconds": round(seconds, 6), "verdict": verdict}
            row["pairs"] = pairs
        row["enumerate"] = _measure_enumeration(graph, n, args)
        reach = max(row["reach"]["seconds"], 1e-9)
        row["z3_over_reach"] = round(row["z3"]["seconds"] / reach, 2)
        enum_s = row["enumerate"]["seconds"]
        row["enumerate_over_reach"] = None if enum_s is None else round(enum_s / reach, 2)
        rows.append(row)
    return {"graphs": rows, "allocation": _measure_allocation(args)}


def _measure_enumeration(graph: Any, n: int, args: argparse.Namespace) -> dict[str, Any]:
    from refcompiler.proofs import Verdict
    from refcompiler.proofs import enumerate as enumeration
    from refcompiler.proofs.conflicts import prepare

    if n > args.enumerate_max_nodes:
        return {"seconds": None, "orders": None, "verdict": None, "note": f"skipped: more than {args.enumerate_max_nodes} nodes"}
    start = time.perf_counter()
    problem = prepare(graph)
    decision = enumeration.decide(problem, limit=args.enumerate_limit)
    seconds = time.perf_counter() - start
    if decision.legal_orders is None:
        return {"seconds": None, "orders": None, "verdict": None, "note": f"more than {args.enumerate_limit} legal orders"}
    proved = all(o.ordered for o in decision.orders.values())
    verdict = Verdict.PROVED if proved else Verdict.COUNTEREXAMPLE
    return {"seconds": round(seconds, 6), "orders": decision.legal_orders, "verdict": verdict.value, "note": ""}


def _allocation_programs(args: argparse.Namespace) -> Iterator[tuple[str, Graph]]:
    """The examples shipped beside the package (when present), then generated graphs."""
    from refcompiler.graph_json import load_graph
    from refcompiler.proofs.scale import large_graph

    examples = Path(__file__).resolve().parents[2] / "examples"
    for path in sorted(examples.glob("*.json")):
        yield path.stem, load_graph(path)
    for n in ALLOC_SIZES:
        yield f"large_graph({n})", large_graph(n, seed=args.graph_seed)


def _measure_allocation(args: argparse.Namespace) -> list[dict[str, Any]]:
    from refcompiler.driver import compile_graph
    from refcompiler.proofs.alloc import activations, optimal_peak

    rows = []
    for name, graph in _allocation_programs(args):
        for pipeline in ("O0", "O2"):
            program = compile_graph(graph, pipeline=pipeline).program
            start = time.perf_counter()
            best = optimal_peak(program, timeout=args.alloc_timeout)
            rows.append(
                {
                    "program": name,
                    "pipeline": pipeline,
                    "activations": len(activations(program)),
                    "allocator_peak": program.peak_bytes,
                    "optimal_peak": best.peak,
                    "lower_bound": best.lower_bound,
                    "seconds": round(time.perf_counter() - start, 6),
                }
            )
    return rows


def _render_proofs(data: dict[str, Any]) -> str:
    def sec(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    def ratio(x: float | None) -> str:
        return "-" if x is None else f"{x:.1f}x"

    header = ("nodes", "pairs", "reach s", "z3 s", "both s", "enum s", "legal orders", "z3/reach", "enum/reach", "verdicts")
    table = [header]
    for r in data["graphs"]:
        enum = r["enumerate"]
        verdicts = {r[e]["verdict"] for e in ("reach", "z3", "both")} | ({enum["verdict"]} if enum["verdict"] else set())
        table.append(
            (
                str(r["nodes"]),
                str(r["pairs"]),
                sec(r["reach"]["seconds"]),
                sec(r["z3"]["seconds"]),
                sec(r["both"]["seconds"]),
                sec(enum["seconds"]),
                str(enum["orders"]) if enum["orders"] is not None else enum["note"],
                ratio(r["z3_over_reach"]),
                ratio(r["enumerate_over_reach"]),
                "/".join(sorted(verdicts)),
            )
        )
    lines = ["proofs: SCH-2 on generated graphs (refcompiler.proofs.scale), one process, side by side"]
    lines += _table(table)
    alloc = [("program", "pipeline", "activations", "allocator peak", "optimal peak", "lower bound", "z3 s")]
    for r in data["allocation"]:
        alloc.append(
            (
                r["program"],
                r["pipeline"],
                str(r["activations"]),
                str(r["allocator_peak"]),
                "timeout" if r["optimal_peak"] is None else str(r["optimal_peak"]),
                str(r["lower_bound"]),
                sec(r["seconds"]),
            )
        )
    lines += ["", "proofs: arena peak bytes, first-fit allocator vs Z3-optimal placement (same 16-byte alignment)"]
    lines += _table(alloc)
    return "\n".join(lines) + "\n"


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    """``rows[0]`` is the header; numbers read best right-aligned."""
    from refc.cli.tables import table_lines

    return table_lines(rows[0], rows[1:], right=True, indent=2)


SECTIONS: tuple[Section, ...] = (
    Section("proofs", "SCH-2 deciders at scale and Z3-optimal arena peaks", _proof_arguments, _measure_proofs, _render_proofs),
    Section(*bench_fuzz.SECTION_ARGS),
    Section("compile", "compile time at O0 and O2 against graph size", bench_compile.add_arguments, bench_compile.measure, bench_compile.render),
    Section(*bench_validate.SECTION_ARGS),
    Section("onnx", "conformance to ONNX's node tests, per op", bench_onnx.add_arguments, bench_onnx.measure, bench_onnx.render),
    Section(*bench_target.SECTION_ARGS),
)


# -- command --------------------------------------------------------------------------


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="measure the suite: run every section, or only those named by flags")
    for s in SECTIONS:
        p.add_argument(f"--{s.name}", action="store_true", help=f"run the {s.name} section: {s.help}")
    p.add_argument("--json", action="store_true", help="print one JSON object keyed by section")
    for s in SECTIONS:
        s.add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    chosen = [s for s in SECTIONS if getattr(args, s.name.replace("-", "_"))] or list(SECTIONS)
    if not chosen:
        raise UsageError("no benchmark sections are defined")
    results: dict[str, Any] = {}
    for s in chosen:
        results[s.name] = s.measure(args)
        if not args.json:
            print(s.render(results[s.name]), end="", flush=True)
    if args.json:
        print(json.dumps(results))
    return 0
