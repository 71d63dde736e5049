"""The case type: the fields a campaign records round-trip, old cases still
load, and a malformed recorded field is a MalformedInput naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from refcompiler.deps import check_schedule
from refcompiler.errors import MalformedInput
from refcompiler.graph_json import load_graph

from fuzz.case import Case, case_from_doc, case_to_doc, whole_order


def _graph():
    from fuzz.corpus import load_case
    from pathlib import Path

    first = sorted((Path(__file__).resolve().parents[2] / "corpus").glob("*.json"))[0]
    return load_case(first).graph


def test_recorded_fields_round_trip():
    case = Case(_graph(), scheduler="my_sched:schedule", scheduler_seed=12345, scheduler_order=("a", "b"),
                versions=(("numpy", "2.0"), ("refc", "0.1.0")), command="refc fuzz --seed 1")
    again = case_from_doc(case_to_doc(case))
    assert (again.scheduler, again.scheduler_seed, again.scheduler_order, again.versions, again.command) == (
        "my_sched:schedule", 12345, ("a", "b"), (("numpy", "2.0"), ("refc", "0.1.0")), "refc fuzz --seed 1")


def test_a_case_without_recorded_fields_loads_as_before():
    doc = case_to_doc(Case(_graph()))
    for key in ("scheduler", "scheduler_seed", "scheduler_order", "versions", "command"):
        assert key not in doc
    case = case_from_doc(doc)
    assert case.scheduler is None and case.scheduler_seed is None and case.versions == () and case.command is None


@pytest.mark.parametrize("field, value", [("scheduler_seed", -1), ("scheduler_seed", "7"), ("scheduler", 3),
                                          ("scheduler_order", "a,b"), ("versions", {"numpy": 2}), ("command", "")])
def test_a_malformed_recorded_field_is_named(field, value):
    doc = case_to_doc(Case(_graph()))
    doc[field] = value
    with pytest.raises(MalformedInput) as e:
        case_from_doc(doc, path="c.json")
    assert field in str(e.value) and "c.json" in str(e.value)


def test_a_target_record_round_trips_and_a_malformed_one_is_named():
    from fuzz.case import TargetRecord

    record = TargetRecord("tvm", ("default", "inplace"), "inplace", "default")
    again = case_from_doc(case_to_doc(Case(_graph(), target=record)))
    assert again.target == record
    assert case_from_doc(case_to_doc(Case(_graph()))).target is None
    for bad, where in (({"name": ""}, "target"), ({"name": "tvm", "configurations": "default"}, "target.configurations"),
                       ({"name": "tvm", "failing": 3}, "target.failing"), ({"name": "tvm", "extra": 1}, "target")):
        doc = case_to_doc(Case(_graph()))
        doc["target"] = bad
        with pytest.raises(MalformedInput) as e:
            case_from_doc(doc, path="c.json")
        assert f"c.json: {where}" in str(e.value), str(e.value)


def test_an_inputs_key_with_control_characters_is_shown_escaped():
    doc = case_to_doc(Case(_graph()))
    doc["inputs"] = {"x\x1b[31m\n": {"seed": 1}}
    with pytest.raises(MalformedInput) as e:
        case_from_doc(doc, path="c.json")
    message = str(e.value)
    assert "\x1b" not in message and "\n" not in message and "'x\\x1b[31m\\n' names no storage" in message


def test_a_case_pipeline_of_more_passes_than_the_bound_is_malformed():
    from fuzz.case import MAX_PIPELINE_ITEMS

    doc = case_to_doc(Case(_graph()))
    doc["pipeline"] = ",".join(["share_buffers"] * MAX_PIPELINE_ITEMS)
    assert case_from_doc(doc).pipeline == doc["pipeline"]
    doc["pipeline"] = ",".join(["share_buffers"] * 100_000)
    with pytest.raises(MalformedInput, match=f"c.json: pipeline: 100000 passes; a case's pipeline lists at most {MAX_PIPELINE_ITEMS}"):
        case_from_doc(doc, path="c.json")


def test_a_finding_record_round_trips_and_a_malformed_one_is_named():
    from fuzz.case import FindingRecord

    record = FindingRecord("SEM-1 at differential by share_buffers", "p3 differs", ("save9", "add7"), 4)
    again = case_from_doc(case_to_doc(Case(_graph(), finding=record)))
    assert again.finding == record
    assert "finding" not in case_to_doc(Case(_graph())) and case_from_doc(case_to_doc(Case(_graph()))).finding is None
    for bad, where in (({"explanation": "x"}, "finding"), ("SEM-1", "finding"), ({"signature": "s", "nodes": "a,b"}, "finding.nodes"),
                       ({"signature": "s", "explanation": 3}, "finding.explanation"), ({"signature": "s", "instruction": -1}, "finding.instruction"),
                       ({"signature": "s", "instruction": True}, "finding.instruction"), ({"signature": "s", "extra\n": 1}, "finding")):
        doc = case_to_doc(Case(_graph()))
        doc["finding"] = bad
        with pytest.raises(MalformedInput) as e:
            case_from_doc(doc, path="c.json")
        assert f"c.json: {where}" in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_a_compiled_order_is_completed_with_the_dead_nodes_each_after_what_it_reads():
    graph = load_graph(Path(__file__).resolve().parents[2] / "examples" / "read_then_save.json")
    # late (reads A) and save_late (reads late) dropped: late must still read A before s saves it
    whole = whole_order(graph, ["sum", "s"])
    assert whole == ("late", "save_late", "sum", "s")
    check_schedule(graph, whole)
    assert whole_order(graph, ["sum", "late", "s", "save_late"]) == ("sum", "late", "s", "save_late")
