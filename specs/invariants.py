"""The invariant table (DESIGN §6): every id used in errors, tests and reports.

A test checks that every invariant id that appears in the code is declared here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Level", "Invariant", "INVARIANTS", "invariant"]


class Level(enum.Enum):
    GRAPH = "graph"
    SCHEDULE = "schedule"
    IR = "ir"
    MEMORY = "memory"
    SEMANTICS = "semantics"


@dataclass(frozen=True)
class Invariant:
    id: str
    level: Level
    statement: str


_TABLE = (
    Invariant("G-1", Level.GRAPH, "the data graph is acyclic; every reference resolves; arity, dtypes, shapes and attributes follow the spec"),
    Invariant("OWN-1", Level.GRAPH, "every owned variable has exactly one owner, and the owner lists it as state"),
    Invariant("OWN-2", Level.GRAPH, "no node but its owner refers to an owned variable"),
    Invariant("OWN-3", Level.GRAPH, "no constant is ever written (not a save target, not a state operand)"),
    Invariant("OWN-4", Level.GRAPH, "only save writes a placeholder; at most one save per placeholder"),
    Invariant("SCH-1", Level.SCHEDULE, "a schedule is a permutation of the nodes that respects data and memory edges"),
    Invariant("SCH-2", Level.SCHEDULE, "every conflicting pair of nodes is ordered by the dependency graph"),
    Invariant("IR-1", Level.IR, "every operand is a live allocation, a view of one, or a module buffer, typed as its instruction's op requires; defs before uses; alloc/dealloc paired; no use after dealloc"),
    Invariant("IR-2", Level.IR, "@in and @inout operands read initialised memory only"),
    Invariant("IR-3", Level.IR, "a constant buffer is never @out or @inout"),
    Invariant("IR-4", Level.IR, "a placeholder buffer is written only by its save, and only after every reader of that placeholder, including readers through a view"),
    Invariant("IR-5", Level.IR, "an owned buffer appears only in its owner's instruction, as @inout"),
    Invariant("IR-6", Level.IR, "a buffer is both a result and an input of one instruction only if the in-place list allows it; two results never share a buffer"),
    Invariant("MEM-1", Level.MEMORY, "buffers live at the same time never overlap in the arena"),
    Invariant("SEM-1", Level.SEMANTICS, "for every legal schedule and pipeline, final placeholders and owned state are bit-identical to the reference, also on a second run"),
    Invariant("TGT-1", Level.SEMANTICS, "a target's results agree with the reference after each run, bit for bit for exact ops and within the per-op ULP bounds elsewhere"),
    Invariant("TGT-2", Level.SEMANTICS, "a target's configurations agree: bit for bit where it promises it (memory reuse, execution mode), within the per-op bounds across optimisation levels"),
    Invariant("TGT-3", Level.SEMANTICS, "an output a target returned, or an input it was fed, is not changed by a later run, nor an input by its own run"),
    Invariant("TGT-4", Level.SEMANTICS, "a target compiles and runs every valid graph it does not refuse, without crashing, raising or hanging"),
)

INVARIANTS: dict[str, Invariant] = {inv.id: inv for inv in _TABLE}


def invariant(inv_id: str) -> Invariant:
    return INVARIANTS[inv_id]
