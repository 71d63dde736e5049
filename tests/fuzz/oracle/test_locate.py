"""Locations come from the checkers' structured data: names, the IR
instruction a violation carries, the writers of a storage."""

from __future__ import annotations

from pathlib import Path

import pytest
from refcompiler.errors import InvariantViolation
from refcompiler.graph_json import load_graph

from fuzz.corpus import load_case
from fuzz.oracle import Bug, Finding, Location, Signature, Stage, check_case
from fuzz.oracle.locate import blame_of, locate, locate_conflict, locate_edge, locate_violation, locate_writers

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


def test_the_site_is_the_fault_not_every_node_involved():
    g = load_graph(READ_THEN_SAVE)
    # the value saved into A is made by the add; the site is the save alone
    assert locate_writers(g, "A").kinds == ("add", "save") and locate_writers(g, "A").site == ("save",)
    # SCH-1 on the edge late -> s: the save ran too early
    assert locate_edge(("late", "s"), g).site == ("save",)
    # an unordered pair on A: the writer is the site
    assert locate_conflict(g, ("s", "late"), "A").site == ("save",)
    e = InvariantViolation("IR-6", "shares", names=("%sum", "A"), instruction=1, instruction_name="late")
    where = locate_violation(e, g)
    assert where.kinds == ("add", "mul") and where.site == ("mul",) and where.instruction == 1
    assert locate(("late",), g).site is None  # no site given: the signature uses every kind


def test_the_blame_is_the_stage_a_violation_names():
    assert blame_of(InvariantViolation("IR-4", "x", stage="after pass share_buffers")) == "share_buffers"
    assert blame_of(InvariantViolation("IR-4", "x", stage="after lowering")) == "lowering"
    assert blame_of(InvariantViolation("SCH-1", "x")) == "scheduler"
    assert blame_of(InvariantViolation("MEM-1", "x")) == "allocator"
    assert blame_of(InvariantViolation("IR-2", "x")) == ""


def test_a_layout_fault_has_no_op_kind_at_its_site():
    g = load_graph(READ_THEN_SAVE)
    e = InvariantViolation("MEM-1", "overlap", names=("%sum", "%late"), instruction=2, instruction_name="%late")
    where = locate_violation(e, g)
    assert where.kinds == ("add", "mul") and where.site == ()
    e = InvariantViolation("IR-5", "foreign", names=("%sum",), instruction=2, instruction_name="late")
    assert locate_violation(e, g).site == ()  # a rule about owned state: no op kind either


def test_the_writer_of_owned_state_is_no_op_kind_at_the_site():
    g = load_graph(ROOT / "examples" / "quantization_profile.json")
    (owned,) = [s.name for s in g.storage if s.kind.value == "owned"][:1]
    where = locate_writers(g, owned)
    assert where.kinds and where.site == ()


def test_a_fault_blamed_on_a_component_is_signed_by_it_not_by_the_ops_at_the_site():
    where = Location(nodes=("r",), kinds=("roll",), instruction=2, site=("roll",))
    blamed = Finding(Stage.COMPILE, "IR-6", "result 0 may not overwrite input 0", where, blame="share_buffers")
    assert blamed.signature == Signature("IR-6", "compile", (), "share_buffers")
    assert str(blamed.signature) == "IR-6 at compile by share_buffers" and blamed.signature.slug == "IR-6.compile.share_buffers"
    wrong = Finding(Stage.DIFFERENTIAL, "SEM-1", "p differs", Location(nodes=("s",), kinds=("save",), site=("save",)))
    assert wrong.signature == Signature("SEM-1", "differential", ("save",))
    target = Finding(Stage.TARGET, "TGT-2", "differs", where, blame="inductor")
    assert target.signature.kinds == ("roll",)  # an external compiler's bugs are told apart by op


def test_a_bug_matches_its_signatures_whatever_the_op_kinds():
    sig = Signature("IR-6", "compile", ("relu",), "share_buffers")
    assert sig.slug == "IR-6.compile.share_buffers.relu"
    assert str(sig) == "IR-6 at compile by share_buffers [relu]"
    assert sig.matches(Bug("IR-6", "compile", "share_buffers"))
    assert Signature("IR-6", "compile", ("add",), "share_buffers").matches(sig.bug)
    assert not Signature("IR-6", "compile", ("add",), "share_buffers").matches(sig)
    assert not sig.matches(Bug("IR-6", "compile", "hoist_dealloc"))
