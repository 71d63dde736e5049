"""The corpus case format (DESIGN §10): load, write, round trip, malformed fields."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from refcompiler.errors import MalformedInput
from refcompiler.graph import Init
from refcompiler.graph_json import graph_from_doc

from fuzz.case import PASS, Case, ExpectKind, case_from_doc, case_inputs, case_to_doc, reject
from fuzz.corpus import case_files, format_case_doc, load_case, replay, write_case

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "read_then_save.json"


def _doc(**extra):
    doc = json.loads(EXAMPLE.read_text())
    doc.update(extra)
    return doc


def test_a_plain_graph_is_a_case_expected_to_pass():
    case = load_case(EXAMPLE)
    assert case.expect == PASS and case.pipeline == "O2" and case.schedule is None
    assert case.graph.meta == ()


def test_case_fields_round_trip(tmp_path):
    doc = _doc(
        expect={"reject": "OWN-2"},
        schedule=["late", "save_late", "sum", "s"],
        pipeline="O0",
        inputs={"A": {"value": [1.0, 2.0, 3.0, 4.0]}, "out": {"seed": 7}},
        found_by="refc fuzz --seed 3",
        mutant="sched-drop-save-war",
    )
    case = case_from_doc(doc)
    assert case.expect.kind is ExpectKind.REJECT and case.expect.invariant == "OWN-2"
    assert case.schedule == ("late", "save_late", "sum", "s")
    assert case.inputs == (("A", Init(value=(1.0, 2.0, 3.0, 4.0))), ("out", Init(seed=7)))
    path = tmp_path / "c.json"
    write_case(path, case)
    again = load_case(path)
    assert again == case and again.path == str(path)
    # the written text is the documented JSON, one storage entry / node per line
    text = path.read_text()
    assert json.loads(text) == case_to_doc(case)
    assert text.count("\n") >= len(case.graph.nodes) + len(case.graph.storage)


def test_case_inputs_are_arrays_of_the_storage_type():
    case = case_from_doc(_doc(inputs={"A": {"value": [1, 2, 3, 4]}, "out": {"seed": 3}}))
    values = case_inputs(case)
    assert values["A"].dtype == np.float32 and values["A"].tolist() == [1.0, 2.0, 3.0, 4.0]
    assert values["out"].shape == (4,)


@pytest.mark.parametrize(
    "extra, field",
    [
        ({"expect": "fail"}, "expect"),
        ({"expect": {"reject": "OWN-X"}}, "expect.reject"),
        ({"schedule": "sum"}, "schedule"),
        ({"schedule": ["sum", 3]}, "schedule"),
        ({"pipeline": 2}, "pipeline"),
        ({"inputs": []}, "inputs"),
        ({"inputs": {"W": {"seed": 1}}}, "inputs.W"),
        ({"inputs": {"nope": {"seed": 1}}}, "inputs.nope"),
        ({"inputs": {"A": {"value": [1, 2]}}}, "inputs.A.value"),
        ({"inputs": {"A": {"seed": -1}}}, "inputs.A.seed"),
        ({"mutant": 3}, "mutant"),
    ],
)
def test_malformed_case_fields_name_the_field(extra, field):
    with pytest.raises(MalformedInput) as e:
        case_from_doc(_doc(**extra), path="case.json")
    assert e.value.path == "case.json" and e.value.field == field


def test_format_case_doc_is_json():
    doc = case_to_doc(Case(graph_from_doc(_doc()), reject("G-1")))
    assert json.loads(format_case_doc(doc)) == doc


def test_case_files_expands_directories(tmp_path):
    (tmp_path / "sub").mkdir()
    for name in ("b.json", "a.json", "sub/c.json", "notes.txt"):
        (tmp_path / name).write_text("{}")
    assert [p.name for p in case_files([tmp_path])] == ["a.json", "b.json", "c.json"]
    with pytest.raises(MalformedInput):
        case_files([tmp_path / "missing"])


def test_a_campaign_directory_stands_for_its_cases(tmp_path):
    """`refc replay OUT` and `pytest --refc-corpus OUT` after `refc fuzz --out OUT`:
    the summary, the bug folders (whose graph.json is a valid graph, not a case of
    the target) and an earlier campaign's outputs are not cases."""
    out = tmp_path / "corpus" / "nightly"
    for name in ("summary.json", "junit.xml", "cases/SEM-1.differential.json", "bugs/TGT-2.target.save/graph.json",
                 "bugs/TGT-2.target.save/finding.json", "earlier-20260101T000000Z/summary.json",
                 "earlier-20260101T000000Z/junit.xml", "earlier-20260101T000000Z/cases/old.json"):
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text("{}")
    (tmp_path / "corpus" / "mine.json").write_text("{}")
    assert case_files([out]) == [out / "cases" / "SEM-1.differential.json"]
    assert case_files([tmp_path / "corpus"]) == [tmp_path / "corpus" / "mine.json", out / "cases" / "SEM-1.differential.json"]
    assert case_files([out / "summary.json"]) == [out / "summary.json"]  # a file named is taken as it is
    (out / "cases" / "SEM-1.differential.json").unlink()
    assert case_files([out]) == []


def test_replay_checks_the_expectation():
    graph = graph_from_doc(_doc())
    assert replay(Case(graph)) is None
    assert replay(Case(graph, reject("OWN-4"))) is not None  # a valid graph is not rejected
    # with its schedule, a case checks that order
    illegal = ("sum", "s", "late", "save_late")
    assert replay(Case(graph, schedule=illegal)) is None  # rightly rejected by the compiler
    assert replay(Case(graph, schedule=illegal), mutant="sched-drop-save-war") is not None


def test_a_case_with_rank_8_init_and_inputs_is_within_the_nesting_bound(tmp_path):
    """The deepest a legitimate file nests (a rank-8 value: 12 levels as an init, 11 as
    an input) must stay under ``MAX_NESTING``, which refuses deeper files unread."""
    shape = [2] * 8
    value = np.arange(256, dtype=np.float32).reshape(shape).tolist()
    doc = {
        "format": "refc-graph/1",
        "storage": [{"name": "A", "kind": "placeholder", "dtype": "float32", "shape": shape, "init": {"value": value}}],
        "nodes": [{"name": "r", "op": "relu", "inputs": ["A"]}],
        "inputs": {"A": {"value": value}},
    }
    path = tmp_path / "case.json"
    path.write_text(json.dumps(doc))
    case = load_case(path)
    assert case.graph.storage[0].init.value == dict(case.inputs)["A"].value == tuple(float(x) for x in range(256))
