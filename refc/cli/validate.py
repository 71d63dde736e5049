"""``refc validate G``: symbolic translation validation (DESIGN §7.4).

Compiles ``G`` (``--scheduler``, ``--seed``, ``--pipeline``, or an explicit
``--order a,b,c``; a corpus case as ``refc compile`` does: under its recorded
schedule or scheduler, pipeline and mutant unless an option says otherwise, a
plug-in it names imported only with ``--allow-plugin MODULE``) and proves the program's final placeholders and owned state
equal to the reference's for all input values, after one run and after two
(``--runs``). With ``--all-schedules``, every legal order up to
``--max-orders``, none started after ``--max-seconds``, each distinct program validated once; the output says how
many orders it covered and never claims all unless it enumerated all.
``--max-terms`` bounds the symbolic terms a graph can make it build, and
their arguments (four per term: a matmul's element has 2k).

Exit 0 proved; 1 a counterexample (confirmed by concrete execution; with
``--out`` written as a corpus case with its input values) or an invariant
broken on the way; 2 bad usage or a malformed graph; 3 inconclusive (a Z3
timeout or an unconfirmed difference): never reported as proved.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Sequence

from refc.cli.common import add_compile_arguments, add_graph_argument, add_mutant_argument, file_path, in_file, out_file, plural, positive_seconds, verdict_exit, whole_number
from refc.cli.settings import compile_from_args, load_with_settings, note_recorded
from refcompiler.errors import InvariantViolation, UsageError
from refcompiler.limits import clipped
from refcompiler.symbolic.defaults import DEFAULT_ALL_SECONDS, DEFAULT_MAX_TERMS, DEFAULT_ORDER_LIMIT, DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from refcompiler.graph import Graph
    from refcompiler.symbolic import Validation
    from refcompiler.symbolic.schedules import AllSchedules

    from refc.cli.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="prove the compiled program equal to the reference for all input values")
    add_graph_argument(p)
    add_compile_arguments(p, from_case=True)
    p.add_argument("--runs", type=int, choices=(1, 2), default=2, help="runs to compare, carrying state (default 2)")
    p.add_argument("--timeout", type=positive_seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS", help=f"Z3 time limit (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--all-schedules", action="store_true", help="validate every legal order (each distinct program once)")
    p.add_argument(
        "--max-orders", type=whole_number(1), default=DEFAULT_ORDER_LIMIT, metavar="N", help=f"with --all-schedules: at most N orders (default {DEFAULT_ORDER_LIMIT})"
    )
    p.add_argument(
        "--max-seconds", type=positive_seconds, default=DEFAULT_ALL_SECONDS, metavar="SECONDS",
        help=f"with --all-schedules: start no order after SECONDS; the orders left out make it inconclusive (default {DEFAULT_ALL_SECONDS:g})",
    )
    p.add_argument(
        "--max-terms", type=whole_number(1), default=DEFAULT_MAX_TERMS, metavar="N", help=f"at most N symbolic terms, and 4N arguments of them in all (default {DEFAULT_MAX_TERMS})"
    )
    p.add_argument("--out", type=file_path, default=None, metavar="FILE", help="write a counterexample as a corpus case")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_mutant_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from refcompiler.symbolic.terms import TermLimit

    if args.out == "-":
        raise UsageError("--out -: validate writes its counterexample as a case file; name one")
    if args.out is not None:
        out_file(args.out, reads=[args.graph])  # before any work: a proof may take long, and its counterexample must land
    if args.all_schedules and args.order is not None:
        raise UsageError("--order and --all-schedules exclude each other")
    if args.all_schedules and (args.scheduler is not None or args.seed is not None):
        raise UsageError("--scheduler and --seed choose one order; --all-schedules validates every legal order")
    if not args.all_schedules and (args.max_orders != DEFAULT_ORDER_LIMIT or args.max_seconds != DEFAULT_ALL_SECONDS):
        raise UsageError("--max-orders and --max-seconds bound --all-schedules; add it, or leave them out")
    graph, settings = load_with_settings(args)
    settings.check()
    note_recorded(args, settings)
    try:
        return _validate(args, graph, settings)
    except TermLimit as e:
        raise UsageError(f"{args.graph}: {e}: raise it with --max-terms") from None


def _validate(args: argparse.Namespace, graph: Graph, settings: Settings) -> int:
    from refcompiler.mutants import activate
    from refcompiler.symbolic import validate_compiled
    from refcompiler.symbolic.schedules import validate_all_schedules

    try:
        if args.all_schedules:
            with activate(settings.mutant):
                result = validate_all_schedules(
                    graph, pipeline=settings.pipeline, runs=args.runs, timeout=args.timeout, limit=args.max_orders, max_terms=args.max_terms,
                    seconds=args.max_seconds,
                )
            return _report_all(args, graph, settings, result)
        compiled = compile_from_args(graph, args, settings)
    except InvariantViolation as e:
        raise in_file(args.graph, e) from None
    validation = validate_compiled(graph, compiled, runs=args.runs, timeout=args.timeout, max_terms=args.max_terms)
    _write_case(args, graph, settings, validation)
    if args.json:
        print(json.dumps(_validation_doc(validation)))
    else:
        print(f"{args.graph}: {_describe(validation, settings.pipeline)}")
    return verdict_exit(validation.verdict)


def _report_all(args: argparse.Namespace, graph: Graph, settings: Settings, result: AllSchedules) -> int:
    from refcompiler.proofs import Verdict
    from refcompiler.symbolic import SCOPE

    if result.failing is not None:
        _write_case(args, graph, settings, result.failing)
    if args.json:
        doc: dict[str, Any] = {
            "verdict": result.verdict.value,
            "legal_orders_covered": result.orders,
            "enumerated_all": result.enumerated_all,
            "distinct_programs": result.programs,
            "max_orders": result.limit,
            "out_of_time": result.out_of_time,
            "seconds": round(result.seconds, 6),
            "failing_order": None if result.failing_order is None else list(result.failing_order),
            "failing": None if result.failing is None else _validation_doc(result.failing),
        }
        print(json.dumps(doc))
    elif result.failing is not None:
        print(f"{args.graph}: {result.verdict.value} at legal order {_order_text(result.failing_order or ())} "
              f"(after {plural(result.orders, 'order')}, {plural(result.programs, 'distinct program')}): {_describe(result.failing, settings.pipeline)}")
    elif result.verdict is Verdict.PROVED:
        print(f"{args.graph}: proved for all {plural(result.orders, 'legal order')} ({plural(result.programs, 'distinct program')}), "
              f"pipeline {settings.pipeline}, {SCOPE.replace('for this schedule and pipeline, ', '')}")
    else:
        limit = f"the time limit, --max-seconds {args.max_seconds:g}" if result.out_of_time else "the limit, --max-orders"
        print(f"{args.graph}: inconclusive: covered {plural(result.orders, 'legal order')} ({limit}), not all; "
              f"{'that distinct program is' if result.programs == 1 else f'those {result.programs} distinct programs are'} proved")
    return verdict_exit(result.verdict)


def _describe(v: Validation, pipeline: str) -> str:
    from refcompiler.proofs import Verdict

    # "counterexample confirmed by ...", not "counterexample: counterexample confirmed by ..."
    head = v.detail if v.detail.startswith(v.verdict.value) else f"{v.verdict.value}: {v.detail}"
    if v.verdict is Verdict.PROVED:
        return f"{head} (schedule {_order_text(v.schedule)}; pipeline {pipeline})"
    return head


ORDER_SHOWN = 64  # nodes an order printed on one line lists; --json gives all


def _order_text(order: Sequence[str]) -> str:
    """An order as ``--order`` takes it (``A,B,C``), its first ``ORDER_SHOWN``
    nodes and how many more when it is longer (a graph of 50,000 nodes made
    one line of half a megabyte)."""
    shown_names = ",".join(clipped(n, 128) for n in order[:ORDER_SHOWN])
    more = len(order) - ORDER_SHOWN
    return shown_names if more <= 0 else f"{shown_names},... and {more} more (all of them: --json)"


def _validation_doc(v: Validation) -> dict[str, Any]:
    from refcompiler.symbolic import SCOPE

    return {
        "verdict": v.verdict.value,
        "detail": v.detail,
        "scope": SCOPE,
        "runs": v.runs,
        "schedule": list(v.schedule),
        "differences": list(v.differences[:20]),
        "used_z3": v.used_z3,
        "terms": v.terms,
        "seconds": round(v.seconds, 6),
        "inputs": None if v.inputs is None else {k: a.tolist() for k, a in v.inputs.items()},
    }


def _write_case(args: argparse.Namespace, graph: Graph, settings: Settings, v: Validation) -> None:
    """The counterexample as a corpus case: the graph, its order, pipeline and inputs."""
    from fuzz.case import whole_order
    from refcompiler.graph_json import graph_to_doc, write_json_atomic
    from refcompiler.proofs import Verdict

    if args.out is None or v.verdict is not Verdict.COUNTEREXAMPLE or v.inputs is None:
        return
    doc = graph_to_doc(replace(graph, meta=()))
    doc["expect"] = "pass"
    doc["schedule"] = list(whole_order(graph, [n for n in v.schedule if n in graph.node_by_name]))  # its dead nodes too
    doc["pipeline"] = settings.pipeline
    doc["inputs"] = {name: {"value": a.tolist()} for name, a in v.inputs.items()}
    doc["found_by"] = f"refc validate --pipeline {settings.pipeline} --runs {args.runs}" + (" --all-schedules" if args.all_schedules else "")
    doc["mutant"] = settings.mutant or getattr(args, "mutant", None)
    try:
        write_json_atomic(args.out, doc)
    except OSError as e:
        raise UsageError(f"cannot write {args.out}: {e.strerror or e}") from None
