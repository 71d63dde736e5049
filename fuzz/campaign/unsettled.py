"""What a campaign's symbolic stage could neither prove nor refute
(``fuzz.oracle.Unsettled``: Z3 unknown or out of time, a difference Z3 found
that the concrete run on its values does not confirm, the term bound). Not a
finding, and no exit code says it; but a campaign must not drop it: it counts
them, and keeps the first few of different kinds (``kept``) as cases a person can look at
with ``refc validate``, written apart from the findings' cases
(``OUT/inconclusive/``, which ``refc replay OUT`` does not read)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from refcompiler.graph import Graph

from fuzz.campaign.config import CampaignConfig
from fuzz.campaign.failure import found_by, scheduled_case, versions
from fuzz.case import Case, Expect, case_to_doc
from fuzz.oracle import Unsettled

__all__ = ["MAX_KEPT", "UnsettledCase", "kept", "kind_of", "unsettled_case"]

MAX_KEPT = 5  # unsettled cases a chunk, and a campaign, keeps to show (the rest are counted)


@dataclass(frozen=True)
class UnsettledCase:
    """One case whose program the symbolic stage left unsettled: what it was
    (``unsettled``, the first of the case's), and the case as a document that
    compiles that program again (``refc validate CASE``)."""

    unsettled: Unsettled
    case_doc: dict[str, Any]
    nodes: int

    @property
    def kind(self) -> tuple[str, str, str, str]:
        return kind_of(self.unsettled)

    def to_doc(self) -> dict[str, Any]:
        """The summary's fields for it (its case file and command are added by the summary)."""
        u = self.unsettled
        choice = u.schedule
        return {
            "pipeline": u.pipeline,
            "schedule": None if choice is None else choice.describe(),
            "order": None if u.order is None else list(u.order),
            "reason": u.reason,
            "difference": u.difference,
            "nodes": self.nodes,
        }


def kind_of(u: Unsettled) -> tuple[str, str, str, str]:
    """What tells two unsettled programs apart for a person (``kept``): the
    pipeline, how it was scheduled, the reason and where the terms first
    differ; a campaign over one graph (``--graph``) meets the same few in
    every case."""
    return u.pipeline, "" if u.schedule is None else u.schedule.describe(), u.reason, u.difference or ""


T = TypeVar("T")


def kept(items: list[T], case: Callable[[T], UnsettledCase]) -> list[T]:
    """The first ``MAX_KEPT`` of ``items`` whose cases (``case(item)``) are of
    distinct ``kind``s, in order."""
    seen: set[tuple[str, str, str, str]] = set()
    out = []
    for item in items:
        kind = case(item).kind
        if kind not in seen and len(out) < MAX_KEPT:
            seen.add(kind)
            out.append(item)
    return out


def unsettled_case(config: CampaignConfig, graph: Graph, expect: Expect, seed: int, u: Unsettled) -> UnsettledCase:
    """The case that compiles ``u``'s program again: ``graph`` under ``u``'s
    pipeline and order (stored when the correct compiler accepts it), or, for
    a scheduler's order that is not stored, that scheduler and the seed it was
    called with (always so for a user's scheduler), as a finding's case
    records them (``failure.scheduled_case``). Not the campaign's mutant: the
    case is no finding, and a corpus case naming a mutant must fail with it;
    the command (``validate_command``) names the mutant instead."""
    base = Case(graph, expect, u.pipeline, found_by=found_by(config), versions=versions(config.target), command=config.command)
    return UnsettledCase(u, case_to_doc(scheduled_case(base, graph, u.schedule, u.order, seed)), len(graph.nodes))
