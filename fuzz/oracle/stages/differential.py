"""Stage ``differential``: every placeholder and owned variable the compiled
program leaves, after each of two runs, is bit-identical to the reference
(SEM-1). Where the pipeline under test is wrong, the same order is checked
under ``O0`` first (``chain.iter_findings``), so a finding under the pipeline
says whether ``O0`` agrees; when it does, the
finding blames the first pass after which the same order goes wrong
(``bisect``); a finding under ``O0`` blames ``dce`` or ``lowering``
(``bisect.o0_component``)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from refcompiler.graph import Graph, Storage, StorageKind
from refcompiler.values import Values, first_difference, same_bits

from fuzz.oracle.bisect import first_wrong_pass, o0_component
from fuzz.oracle.context import RunContext
from fuzz.oracle.finding import Finding, Stage
from fuzz.oracle.locate import locate_writers
from fuzz.oracle.stage import OracleStage

__all__ = ["STAGE", "first_difference", "first_wrong"]


def first_wrong(graph: Graph, got: Sequence[Values], want: Sequence[Values]) -> tuple[Storage, str] | None:
    """The first placeholder or owned variable that, after some run, is
    missing from ``got`` or not bit-identical to ``want``, and what is wrong."""
    for run, (w, g) in enumerate(zip(want, got, strict=True), 1):
        for s in graph.storage:
            if s.kind is StorageKind.CONSTANT:
                continue
            if s.name not in g:
                return s, f"after run {run}, the compiled program gives no value for {s.kind.value} '{s.name}'"
            if not same_bits(g[s.name], w[s.name]):
                diff = first_difference(np.asarray(g[s.name]), w[s.name])
                return s, f"after run {run}, {s.kind.value} '{s.name}' differs from the reference: {diff}{_started_right(run)}"
    return None


def _started_right(run: int) -> str:
    """What a difference first seen after a later run than the first says beyond
    its values: every value agreed after the run before, so this one started
    from the right values (a pass that holds for the initial values only, such
    as one folding owned state that starts at zero, showed only "after run 2")."""
    return "" if run == 1 else f"; every value agreed after run {run - 1}, so run {run} started from the right values"


def check(ctx: RunContext) -> Finding | None:
    if ctx.got is None:
        return None  # nothing ran (e.g. an illegal schedule, rightly rejected)
    graph, reference = ctx.case.graph, ctx.case.reference
    wrong = first_wrong(graph, ctx.got, reference)
    if wrong is None:
        return None
    storage, why = wrong

    def is_wrong(got: Sequence[Values]) -> bool:
        return first_wrong(graph, got, reference) is not None

    if ctx.pipeline != "O0":
        blame = first_wrong_pass(ctx, is_wrong)
        why += f" (O0 agrees with the reference{f'; {blame.text}' if blame.name else ''})"
    else:
        blame = o0_component(ctx, is_wrong)
        why += f" ({blame.text})" if blame.name else ""
    where = locate_writers(graph, storage.name)
    return Finding(Stage.DIFFERENTIAL, "SEM-1", why, where, order=ctx.order, blame=blame.name, **ctx.where)  # type: ignore[arg-type]


STAGE = OracleStage(Stage.DIFFERENTIAL, ("SEM-1",), check, per_schedule=True)
