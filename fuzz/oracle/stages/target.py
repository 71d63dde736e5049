"""Stage ``target``: a real compiler (``refcompiler.targets``) against itself and
against refc's reference (DESIGN §8, "External targets").

Runs once per graph, after ``verify`` and ``reference``, in the chain
``chain.target_chain`` builds for one target (the default ``CHAIN`` does not
include it). The target's configurations run two runs each, carrying state
(``refcompiler.targets.base.execute_all``), in a child process when ``isolate``
(``refcompiler.targets.isolate``: a crash or a hang is a finding, not a dead
fuzzer). ``refcompiler.targets.verdict.judge`` decides, in this order:

- TGT-4: the target crashed, hung (``timeout``) or raised on a valid graph;
- TGT-3: an output it returned, or an input it was fed, was changed by a later run;
- TGT-2: configurations of one optimisation level differ in any bit (memory
  pattern, arena and execution mode must be invisible), or optimisation levels
  differ beyond the per-op bounds (they may fuse or reorder float ops: MatMul+Add
  into Gemm, reductions vectorised differently; exact ops stay exact);
- TGT-1: the least optimised configuration differs from the reference after the
  first or second run beyond the per-op bounds of ``refcompiler.targets.bounds``
  (exact ops bit for bit; ``max(-0.0, +0.0)`` either zero; NaN any payload).

A graph the target refuses is not a finding (``ctx.target_refused`` counts it).
The finding's location names the nodes behind the storage that differed.
"""

from __future__ import annotations

from typing import Any

from refcompiler.errors import RefCompilerError
from refcompiler.graph import Graph, StorageKind
from refcompiler.targets.bounds import cones
from refcompiler.targets.isolate import run_target
from refcompiler.targets.verdict import Discrepancy, Kind, judge

from fuzz.oracle.context import GraphContext
from fuzz.oracle.finding import Finding, Location, Stage
from fuzz.oracle.stage import OracleStage

__all__ = ["stage_for", "finding_of", "INVARIANTS"]

INVARIANTS = ("TGT-1", "TGT-2", "TGT-3", "TGT-4")


def finding_of(graph: Graph, d: Discrepancy) -> Finding:
    """The oracle's finding for a discrepancy: located at the nodes behind the
    storage that differed, the readers of an input that changed, or every node
    when the whole target failed (a crash, hang or error: no op is at fault that
    refc could name, so its site is empty and its signature does not depend on
    the graph's ops). Owned state that a run changed after handing it over or
    in (TGT-3) has no site either: the fault is in how the target binds state,
    and which op owns the state is the graph's (as for IR-5; a target writing
    each owner's state in place was three findings, by owner kind). A wrong
    value (TGT-1, TGT-2) keeps the op kinds behind it: a target's
    configuration holds a lowering per op, and its bugs in two ops are two.
    The failing configuration is the blamed component: one bug per
    configuration that shows it."""
    behind = cones(graph)
    site = None
    if d.kind is Kind.CHANGED and d.storage in _owned(graph):
        nodes, site = [n.name for n in graph.nodes if d.storage in n.state], ()
    elif d.storage in behind:
        nodes = sorted(behind[d.storage])
    elif d.storage is not None:  # an input: the nodes that read it
        nodes = [n.name for n in graph.nodes if d.storage in {r.name for r in n.inputs} | set(n.state)]
    else:
        nodes, site = [n.name for n in graph.nodes], ()
    kinds = tuple(sorted({graph.node_by_name[n].op.value for n in nodes}))
    where = Location(tuple(nodes), kinds, site=site)
    return Finding(Stage.TARGET, d.invariant, f"{d.kind.value}: {d.detail}", where, blame=d.failing or "", configurations=(d.failing, d.passing))


def _owned(graph: Graph) -> set[str]:
    return {s.name for s in graph.storage if s.kind is StorageKind.OWNED}


def stage_for(spec: str, target: Any, *, isolate: bool = True, timeout: float | None = None) -> OracleStage:
    """The stage checking ``target`` (resolved from ``spec``; the child process
    resolves ``spec`` again). ``timeout``: seconds per graph, by default the
    target's own (``isolate.run_target``)."""

    def check(ctx: GraphContext) -> Finding | None:
        outcome = run_target(spec, target, ctx.graph, ctx.inputs, isolate=isolate, timeout=timeout)
        if outcome.refused is not None:
            ctx.target_refused = outcome.refused
            return None
        try:
            reference = ctx.reference
        except RefCompilerError:
            return None  # the reference stage has said so
        d = judge(ctx.graph, outcome, reference)
        return None if d is None else finding_of(ctx.graph, d)

    return OracleStage(Stage.TARGET, INVARIANTS, check)
