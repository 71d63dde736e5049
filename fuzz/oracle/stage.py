"""An oracle stage as data: a name, the invariants it checks, and one check.

A stage with ``per_schedule=False`` runs once per graph on the
``GraphContext``; one with ``per_schedule=True`` runs for every schedule and
pipeline on a ``RunContext``, after every per-graph stage. ``check`` returns
the stage's finding or ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from fuzz.oracle.finding import Finding, Stage

__all__ = ["OracleStage"]


@dataclass(frozen=True)
class OracleStage:
    """``fatal``: a finding ends the chain for the graph (per graph) or for the
    schedule (per schedule: its other pipelines and later stages are
    skipped). ``on_reject``: the stage also runs on a case expected to be
    rejected; every other stage runs only on cases expected to pass.
    ``reads_inputs``: a per-graph stage whose verdict depends on the case's
    input values, not on its graph alone (a case of the same graph with other
    inputs runs it again: ``GraphContext.carried``)."""

    name: Stage
    invariants: tuple[str, ...]
    check: Callable[[Any], Finding | None]
    per_schedule: bool = False
    fatal: bool = True
    on_reject: bool = False
    reads_inputs: bool = False
