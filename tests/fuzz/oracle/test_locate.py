"""Locations come from the checkers' structured data: names, the IR
instruction a violation carries, the writers of a storage."""

from __future__ import annotations

from pathlib import Path

import pytest
from refcompiler.errors import InvariantViolation
from refcompiler.graph_json import load_graph

from fuzz.corpus import load_case
from fuzz.oracle import Stage, check_case
from fuzz.oracle.locate import locate, locate_violation, locate_writers

ROOT = Path(__file__).resolve().parents[3]
READ_THEN_SAVE = ROOT / "examples" / "read_then_save.json"


def test_names_are_resolved_to_nodes_and_kinds():
    g = load_graph(READ_THEN_SAVE)
    where = locate(("%late", "late:0", "A", "nobody"), g)
    assert where.nodes == ("late",) and where.kinds == ("mul",) and where.instruction is None


def test_a_message_alone_locates_nothing():
    g = load_graph(READ_THEN_SAVE)
    e = InvariantViolation("IR-2", "instruction 3 `kernel late = mul(@out %late, @in A, @in A)`: uninitialised")
    assert locate_violation(e, g).kinds == ()


def test_the_writers_of_a_placeholder_are_its_save_and_the_value_saved():
    g = load_graph(READ_THEN_SAVE)
    saves = [n for n in g.nodes if n.op.value == "save"]
    where = locate_writers(g, saves[0].target)
    assert saves[0].name in where.nodes and "save" in where.kinds


@pytest.mark.parametrize("mutant", ["hoist-dealloc-early", "share-any-input", "alloc-early-free"])
def test_an_ir_fault_is_located_at_its_instruction(mutant):
    case = load_case(ROOT / "corpus" / f"mutant.{mutant}.json")
    f = check_case(case, mutant=mutant).finding
    assert f is not None and f.stage is Stage.COMPILE
    assert f.location.instruction is not None and f.location.nodes and f.kinds
    assert f"instruction {f.location.instruction} " in f.explanation
