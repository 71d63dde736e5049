"""``refc fuzz --graph G``: a campaign over one given graph: its schedules and
pipelines, with fresh seeded input values, findings shrunk and stored as usual;
a malformed or invalid G, or one the reference cannot run, is exit 2, one
line, before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuzz.corpus import load_case, replay
from tests.cli.inprocess import refc

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("extra", [[], ["--scheduler", "random", "--pipeline", "share_buffers,eliminate_copies", "--seed", "3"]])
def test_a_clean_graph_gives_no_finding_and_checks_its_schedules(capsys, tmp_path, extra):
    out = tmp_path / "out"
    graph = EXAMPLES / "clamped_ids.json"
    code, stdout, err = refc(capsys, "fuzz", "--graph", graph, "--max-cases", 12, "--workers", 1, "--out", out, *extra)
    assert code == 0, (stdout, err)
    doc = _summary(out)
    assert doc["graph"] == str(graph) and f"graph {graph}" in err
    assert doc["cases"] > 0 and doc["schedules"] > 0 and doc["distinct_failures"] == 0
    assert doc["invalid_cases"] == 0 and list(out.glob("cases/*.json")) == []


def test_a_mutant_that_breaks_the_graph_is_found_shrunk_and_stored(capsys, tmp_path):
    out = tmp_path / "out"
    graph = EXAMPLES / "read_then_save.json"
    code, stdout, err = refc(capsys, "fuzz", "--graph", graph, "--mutant", "sched-drop-save-war", "--budget", 10,
                             "--max-cases", 20, "--workers", 1, "--out", out)
    assert code == 1, (stdout, err)
    doc = _summary(out)
    assert doc["graph"] == str(graph) and doc["mutant"] == "sched-drop-save-war"
    (entry,) = doc["signatures"]
    case = load_case(out / entry["case"])
    assert f"--graph {graph}" in case.found_by and case.mutant == "sched-drop-save-war"
    assert entry["nodes"] <= 3  # read_then_save has 3 nodes; the reducer may make it smaller
    assert replay(case, mutant="sched-drop-save-war") is not None and replay(case) is None


def test_two_workers_give_a_summary_over_the_graph(capsys, tmp_path):
    out = tmp_path / "out"
    code, stdout, err = refc(capsys, "fuzz", "--graph", EXAMPLES / "sgd_momentum.json", "--max-cases", 8, "--workers", 2,
                             "--symbolic", "off", "--out", out)
    assert code == 0, (stdout, err)
    assert _summary(out)["schedules"] > 0 and _summary(out)["workers"] == 2


def test_the_graph_combines_with_an_external_target(capsys, tmp_path):
    out = tmp_path / "out"
    code, stdout, err = refc(capsys, "fuzz", "--graph", EXAMPLES / "clamped_ids.json", "--target", "onnxruntime-pairs",
                             "--max-cases", 2, "--workers", 1, "--out", out)
    assert code == 0, (stdout, err)
    assert _summary(out)["cases"] >= 1 and _summary(out)["invalid_cases"] == 0


@pytest.mark.parametrize(
    "name, needles",
    [
        ("invalid/OWN-2.json", ["OWN-2", "'peek'", "a campaign needs a valid graph"]),
        ("invalid/G-1.cycle.json", ["G-1", "a campaign needs a valid graph"]),
        ("malformed/bad_dtype.json", ["dtype"]),
        ("no_such_file.json", ["no such file"]),
        # valid, but its ids are beyond the table: every case was a finding "error at reference"
        ("run_errors/embedding_id_out_of_range.json", ["the reference cannot run it", "embedding id 7 is out of range", "refc run"]),
    ],
)
def test_a_bad_graph_is_one_line_and_exit_2_before_any_work(capsys, tmp_path, name, needles):
    out = tmp_path / "out"
    path = ROOT / "tests" / "data" / name
    code, stdout, err = refc(capsys, "fuzz", "--graph", path, "--budget", 5, "--out", out)
    assert code == 2, (stdout, err)
    assert len(err.strip().splitlines()) == 1 and str(path) in err, err
    for needle in needles:
        assert needle in err, err
    assert not out.exists()


def test_the_help_says_to_import_an_onnx_model_first(capsys):
    code, stdout, _ = refc(capsys, "fuzz", "--help")
    assert code == 0 and "--graph" in stdout and "refc import" in stdout


@pytest.mark.parametrize("option", [["--max-nodes", "20"], ["--max-dim", "16"], ["--max-nodes", "10"], ["--max-dim", "4"]])
def test_a_size_of_generated_graphs_with_a_given_graph_is_bad_usage(capsys, tmp_path, option):
    # it was accepted and ignored: every case is the given graph (and a default value, given, went unseen)
    code, out, err = refc(capsys, "fuzz", "--graph", EXAMPLES / "sgd_momentum.json", *option, "--max-cases", 2, "--out", tmp_path / "o")
    assert (code, out) == (2, "") and "--max-nodes and --max-dim size the generated graphs; with --graph every case is that graph" in err


@pytest.mark.parametrize("clean", [True, False])
def test_a_graph_among_the_earlier_outputs_is_neither_removed_nor_moved(capsys, tmp_path, clean):
    """`refc fuzz --graph OUT/cases/c.json --out OUT --clean` (a found case fuzzed
    again) removed the very file it read; without --clean it was moved aside,
    and the summary named a file that was gone."""
    out = tmp_path / "out"
    (out / "cases").mkdir(parents=True)
    graph = out / "cases" / "c.json"
    graph.write_text((EXAMPLES / "sgd_momentum.json").read_text())
    (out / "summary.json").write_text('{"format": "refc-fuzz-summary/1"}')
    code, _, err = refc(capsys, "fuzz", "--graph", graph, "--out", out, "--max-cases", "2", "--workers", "1", *(["--clean"] if clean else []))
    assert code == 2 and f"--graph {graph}: is in {out / 'cases'}, an earlier campaign's output this one would" in err
    assert graph.read_text() == (EXAMPLES / "sgd_momentum.json").read_text() and not list(out.glob("earlier-*"))
    outside = tmp_path / "c.json"
    outside.write_text(graph.read_text())
    assert refc(capsys, "fuzz", "--graph", outside, "--out", out, "--max-cases", "2", "--workers", "1", "--clean")[0] == 0
