"""Judging a target's ``Outcome`` against itself and against refc's reference.

The first discrepancy, in this order (the most specific first: a maintainer can
check the earlier kinds without refc):

1. ``CRASH`` / ``HANG`` (TGT-4): the process running the target died or overran
   its time limit;
2. ``ERROR`` (TGT-4): the target raised on a valid graph;
3. ``CHANGED`` (TGT-3): an array the target returned, or one it was fed, was changed
   by a later run;
4. ``CONFIGS`` (TGT-2): two configurations of one level differ in any bit, or a
   level's first configuration differs from the least optimised one beyond the
   per-op bounds of ``refcompiler.targets.bounds``;
5. ``REFERENCE`` (TGT-1): the least optimised configuration differs from the
   reference after some run beyond those bounds.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from refcompiler.graph import Graph
from refcompiler.targets.base import ConfigRun, Outcome, written_storage
from refcompiler.targets.bounds import agree, bound_for, cones, inexact_nodes, op_kinds, read_scale, reduction_terms
from refcompiler.values import Values, constant_values, first_difference

__all__ = ["Kind", "Discrepancy", "judge", "INVARIANT_OF"]


class Kind(enum.Enum):
    CRASH = "crash"
    HANG = "hang"
    ERROR = "error"
    CHANGED = "changed"
    CONFIGS = "configs"
    REFERENCE = "reference"


INVARIANT_OF = {
    Kind.CRASH: "TGT-4", Kind.HANG: "TGT-4", Kind.ERROR: "TGT-4",
    Kind.CHANGED: "TGT-3", Kind.CONFIGS: "TGT-2", Kind.REFERENCE: "TGT-1",
}  # fmt: skip


@dataclass(frozen=True)
class Discrepancy:
    """``failing``: the configuration's key; ``passing``: the one it was compared
    with (a key, ``"reference"``, or ``None``); ``storage``, ``run``: what differed
    and after which run; ``bitwise``: whether bits were owed."""

    kind: Kind
    detail: str
    failing: str | None
    passing: str | None = None
    storage: str | None = None
    run: int | None = None
    bitwise: bool = False

    @property
    def invariant(self) -> str:
        return INVARIANT_OF[self.kind]


def judge(graph: Graph, outcome: Outcome, reference: Sequence[Values]) -> Discrepancy | None:
    """The first discrepancy of ``outcome`` (``None`` when refused or all agree)."""
    if outcome.refused is not None:
        return None
    if outcome.crash is not None:
        kind = Kind.HANG if outcome.hung else Kind.CRASH
        return Discrepancy(kind, outcome.crash, outcome.crash_config, outcome.crash_passing)
    results = outcome.results
    ok = [r for r in results if r.error is None]
    for r in results:
        if r.error is not None:
            return Discrepancy(Kind.ERROR, f"{r.config.key}: {r.error}", r.config.key, ok[0].config.key if ok else None)
    for r in results:
        if r.changed:
            storage, run = r.changed[0]
            return Discrepancy(Kind.CHANGED, f"{r.config.key}: {r.changed_text[0]}", r.config.key, None, storage, run, True)
    behind = cones(graph)
    constants = constant_values(graph)  # read by a cone as much as what a run starts from: ``x - tanh(x)`` of a constant x
    entries = [{**constants, **e} for e in (outcome.entry or {}, *reference)]  # what each run starts from
    ops = {
        s: (op_kinds(graph, nodes), inexact_nodes(graph, nodes), [read_scale(graph, nodes, e) for e in entries], reduction_terms(graph, nodes))
        for s, nodes in behind.items()
    }  # fmt: skip
    names = [s for s in written_storage(graph) if s in ops]
    if not results:
        return None
    return _configs(results, names, ops) or _reference(results[0], reference, names, ops)


def _configs(results: list[ConfigRun], names: list[str], ops: dict) -> Discrepancy | None:
    base = results[0]
    first_of_level: dict[str, ConfigRun] = {}
    for r in results:
        level_base = first_of_level.setdefault(r.config.level, r)
        if r is not level_base:
            d = _compare(r, level_base, names, ops, bitwise=True)
            if d is not None:
                return d
    for r in first_of_level.values():
        if r is not base:
            d = _compare(r, base, names, ops, bitwise=False)
            if d is not None:
                return d
    return None


def _compare(r: ConfigRun, other: ConfigRun, names: list[str], ops: dict, *, bitwise: bool) -> Discrepancy | None:
    for k, (got, want) in enumerate(zip(r.runs, other.runs), start=1):
        for s in names:
            kinds, inexact, scales, terms = ops[s]
            same, ulps = agree(got[s], want[s], kinds, bitwise=bitwise, factor=bound_for(inexact, k), scale=scales[k - 1], terms=terms)
            if not same:
                owed = "bit for bit" if bitwise else "within the per-op bounds"
                detail = f"'{s}' after run {k}: {r.config.key} differs from {other.config.key} ({_how(got[s], want[s], ulps)}; owed {owed}){_carried(k)}"
                return Discrepancy(Kind.CONFIGS, detail, r.config.key, other.config.key, s, k, bitwise)
    return None


def _reference(r: ConfigRun, reference: Sequence[Values], names: list[str], ops: dict) -> Discrepancy | None:
    for k, (got, want) in enumerate(zip(r.runs, reference), start=1):
        for s in names:
            kinds, inexact, scales, terms = ops[s]
            same, ulps = agree(got[s], want[s], kinds, factor=bound_for(inexact, k), scale=scales[k - 1], terms=terms)
            if not same:
                detail = f"'{s}' after run {k}: {r.config.key} differs from the reference ({_how(got[s], want[s], ulps)}){_carried(k)}"
                return Discrepancy(Kind.REFERENCE, detail, r.config.key, "reference", s, k)
    return None


def _carried(run: int) -> str:
    """What a difference first seen after run ``run`` says beyond its values:
    after a later run than the first, every value agreed after the run before,
    so that run started from the values it should have and computed otherwise
    (a target that starts each run from the initial owned state, or keeps
    some of its own, showed only "after run 2")."""
    if run == 1:
        return ""
    return f"; every value agreed after run {run - 1}, so run {run} started from the right values: is state carried from one run to the next?"


def _how(got: object, want: object, ulps: int) -> str:
    """How ``got`` differs from ``want`` (``first_difference``: their types, or
    the first element whose bits differ and its values: an integer tensor has
    no ULPs), after the float32 ULP distance."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype.kind not in "biuf" or want.dtype.kind not in "biuf":  # nothing refc stores
        return f"got {got.dtype}{list(got.shape)}, want {want.dtype}{list(want.shape)}"
    where = first_difference(got, want)
    if got.dtype != want.dtype or got.shape != want.shape or got.dtype.kind != "f":
        return where
    return f"{'NaNs or infinities differ' if ulps >= 2**32 else f'{ulps} ULPs apart at most'}; {where}"
