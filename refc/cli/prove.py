"""``refc prove G``: SCH-2 for one graph, a proof or a counterexample schedule pair.

``refc prove G [--engine reach|z3|both] [--json] [--no-verify] [--timeout SECONDS]
[--pipeline P] [--mutant NAME] [--format text|dot|svg|png] [-o FILE]``

Exit 0 proved; 1 a counterexample, or an invalid graph (without
``--no-verify``, reported as ``refc check`` does), or no legal schedule at
all; 2 bad usage or a malformed graph; 3 inconclusive (a Z3 unknown or
timeout is never reported as proved; ``--timeout`` bounds Z3 and
enumeration over the whole proof, 60 s unless given); 4 the two deciders disagree (a bug in
refc).

With ``--no-verify`` the deciders work from the raw effects of an invalid
graph, which shows why an ownership rule matters: the conflict the rule
forbids comes out as two legal schedules that disagree. A counterexample on a
graph the verifier accepts is run through the compiled pipeline (``--pipeline``,
default O0) under both schedules to confirm a miscompile.

``--json`` prints one object: ``verdict`` (``proved``, ``counterexample``,
``inconclusive``, or ``invalid`` when the graph is rejected before any proof),
``engine``, ``pairs_checked``, ``seconds``, ``counterexample`` (``storage``,
``nodes``, ``schedules``) or null, ``detail``, ``confirmation`` (``outcome``,
``detail``) or null, and ``violations`` for an invalid graph.

``--format dot|svg|png`` draws the verdict instead: a counterexample as the
graph with the missing ordering beside its two schedules
(``refcompiler.pictures.counterexample_dot``), otherwise the graph (with its
violations when it is rejected); the exit code is the same.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from refc.cli.common import add_graph_argument, add_mutant_argument, load, plural, positive_seconds, verdict_exit
from refc.cli.picture import add_picture_arguments, check_output, emit_dot, picture_format
from refcompiler.errors import InternalError, InvariantViolation, RefCompilerError, UsageError

if TYPE_CHECKING:
    from refcompiler.graph import Graph
    from refcompiler.proofs import Proof
    from refcompiler.proofs.witness import Confirmation

__all__ = ["register", "run"]

# Seconds a proof may take by default: a graph file must not hold refc for ever
# (Z3 spent 148 s on a 30,000-node fan); past them the verdict is inconclusive
DEFAULT_TIMEOUT = 60.0

ENGINE_CHOICES = ("reach", "z3", "both")
INVALID = "invalid"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prove", help="prove that every legal schedule is conflict-equivalent (SCH-2), or show two that are not")
    add_graph_argument(p)
    p.add_argument("--engine", choices=ENGINE_CHOICES, default="both", help="decider: reach, z3, or both, which must agree (default both)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_picture_arguments(p, text_help="the verdict, and a counterexample's schedules side by side")
    p.add_argument(
        "--no-verify",
        action="store_true",
        help="skip the verifier: decide from the raw effects of a possibly invalid graph",
    )
    p.add_argument("--timeout", type=positive_seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"time limit for Z3 and enumeration, over the whole proof; past it the verdict is inconclusive (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--pipeline", default="O0", metavar="P", help="pipeline that runs a counterexample's schedules (default O0)")
    add_mutant_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from refcompiler.passes import resolve_pipeline
    from refcompiler.proofs import prove
    from refcompiler.verifier import violations

    # Resolved now, though only a counterexample uses it: an unknown pipeline is bad usage (2)
    resolve_pipeline(args.pipeline)
    if args.json and picture_format(args) is not None:
        raise UsageError("--json and --format are exclusive: one prints the verdict as JSON, the other draws it")
    if args.output is not None and picture_format(args) is None:
        raise UsageError("-o writes a picture: give --format dot, svg or png (the text goes to stdout)")
    check_output(args)
    graph = load(args)
    if not args.no_verify:
        found = violations(graph)
        if found:
            return _picture(args, graph, None) if picture_format(args) else _invalid(args, found)
    try:
        proof = prove(graph, engine=args.engine, timeout=args.timeout)
    except InvariantViolation as e:  # no legal schedule exists at all (SCH-1, or a G-1 data cycle)
        return _invalid(args, [e])
    if picture_format(args) is not None:
        return _picture(args, graph, proof)
    confirmation = _confirm(graph, proof, args.pipeline)
    if args.json:
        print(json.dumps(_doc(args, proof, confirmation)))
    else:
        print(_text(args, graph, proof, confirmation), end="")
    return verdict_exit(proof.verdict)


def _picture(args: argparse.Namespace, graph: Graph, proof: Proof | None) -> int:
    """Draw the counterexample (graph and both schedules), or the graph alone:
    with its violations when it is rejected (``proof`` is None, exit 1)."""
    from refcompiler.pictures import counterexample_dot, graph_dot

    if proof is None or proof.counterexample is None:
        emit_dot(args, graph_dot(graph))
        return 1 if proof is None else verdict_exit(proof.verdict)
    emit_dot(args, counterexample_dot(graph, proof.counterexample, explanation=proof.detail))
    return verdict_exit(proof.verdict)


def _confirm(graph: Graph, proof: Proof, pipeline: str) -> Confirmation | None:
    from refcompiler.proofs.witness import Confirmation, confirm

    if proof.counterexample is None:
        return None
    try:
        return confirm(graph, proof.counterexample, pipeline=pipeline)
    except InternalError:
        raise
    except RefCompilerError as e:
        return Confirmation("not run", f"the schedules could not be run: {e}")


def _invalid(args: argparse.Namespace, found: list[InvariantViolation]) -> int:
    if args.json:
        doc = {
            "graph": args.graph,
            "verdict": INVALID,
            "engine": args.engine,
            "violations": [{"invariant": v.invariant, "message": v.detail, "names": list(v.names)} for v in found],
        }
        print(json.dumps(doc))
    else:
        for v in found:
            names = f" [{', '.join(v.names)}]" if v.names else ""
            print(f"{args.graph}: {v.invariant}: {v.detail}{names}")
        if not any(v.invariant == "SCH-1" for v in found):
            print(f"{args.graph}: not proved: the graph is invalid (use --no-verify to decide from its raw effects)")
    return 1


def _doc(args: argparse.Namespace, proof: Proof, confirmation: Confirmation | None) -> dict[str, Any]:
    cex = proof.counterexample
    return {
        "graph": args.graph,
        "verdict": proof.verdict.value,
        "engine": proof.engine,
        "pairs_checked": proof.pairs_checked,
        "seconds": round(proof.seconds, 6),
        "counterexample": None
        if cex is None
        else {"storage": cex.storage, "nodes": list(cex.nodes), "schedules": [list(s) for s in cex.schedules]},
        "detail": proof.detail,
        "confirmation": None if confirmation is None else {"outcome": confirmation.outcome, "detail": confirmation.detail},
    }


def _text(args: argparse.Namespace, graph: Graph, proof: Proof, confirmation: Confirmation | None) -> str:
    from refcompiler.proofs import Verdict
    from refcompiler.verifier import violations

    head = (
        f"{args.graph}: {proof.verdict.value} (engine {proof.engine}, "
        f"{plural(proof.pairs_checked, 'conflicting pair')} decided, {proof.seconds:.3f} s)"
    )
    lines = [head]
    if proof.detail:
        lines.append(f"  {proof.detail}")
    cex = proof.counterexample
    if cex is not None:
        a, b = cex.nodes
        lines.append(f"  two legal schedules run '{a}' and '{b}' (marked *) in opposite orders:")
        lines.extend("  " + row for row in side_by_side(cex.schedules, marked=set(cex.nodes)))
        if args.no_verify:
            lines.extend(f"  note: refc check rejects this graph: {v.invariant}: {v.detail}" for v in violations(graph))
    if confirmation is not None:
        lines.append(f"  run under pipeline {args.pipeline}: {confirmation.outcome}: {confirmation.detail}")
    if proof.verdict is Verdict.INCONCLUSIVE:
        lines.append("  not proved: some pair is undecided (try a longer --timeout, or --engine reach)")
    return "\n".join(lines) + "\n"


def side_by_side(schedules: tuple[tuple[str, ...], ...], *, marked: set[str]) -> list[str]:
    """The schedules as columns, one step per row (numbered), ``marked`` nodes starred."""
    from refc.cli.tables import table_lines

    cells = [[f"{n} *" if n in marked else n for n in s] for s in schedules]
    header = ["", *(f"schedule {k}" for k in range(1, len(cells) + 1))]
    rows = [(i, *step) for i, step in enumerate(zip(*cells, strict=True), 1)]
    return table_lines(header, rows)
