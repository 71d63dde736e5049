"""``refc prove`` and ``refc bench``: exit codes, the JSON object, the witness, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from refc.cli import COMMANDS
from refcompiler.deps import check_schedule
from refcompiler.graph_json import dump_graph, load_graph
from refcompiler.proofs import reach
from refcompiler.proofs.conflicts import Decision, Order
from refcompiler.proofs.scale import large_graph
from tests.cli.inprocess import refc

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
PROVE_DATA = ROOT / "tests" / "data" / "prove"
INVALID = ROOT / "tests" / "data" / "invalid"


def _corpus_graphs_expected_to_pass() -> list[Path]:
    out = []
    for path in sorted((ROOT / "corpus").glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("expect", "pass") == "pass":
            out.append(path)
    return out




def test_commands_are_registered():
    assert {"prove", "bench"} <= set(COMMANDS)


@pytest.mark.parametrize("path", EXAMPLES + _corpus_graphs_expected_to_pass(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_example_and_corpus_graph_is_proved_by_both_engines(capsys, path):
    code, out, _ = refc(capsys, "prove", path, "--engine", "both")
    assert code == 0, out
    assert ": proved (engine both" in out


@pytest.mark.parametrize("engine", ["reach", "z3", "both"])
def test_json_of_a_proof(capsys, engine):
    code, out, _ = refc(capsys, "prove", ROOT / "examples" / "sgd_momentum.json", "--engine", engine, "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["verdict"] == "proved"
    assert doc["engine"] == engine
    assert doc["pairs_checked"] == 3
    assert doc["counterexample"] is None
    assert isinstance(doc["seconds"], float)


@pytest.mark.parametrize(
    ("name", "pair", "rule"),
    [("foreign_state", ["emb", "peek"], "OWN-2"), ("two_saves", ["save_sum", "save_negw"], "OWN-4"), ("save_into_constant", ["scaled", "clobber"], "OWN-3")],
)
def test_no_verify_gives_a_witness_for_each_broken_ownership_rule(capsys, name, pair, rule):
    path = PROVE_DATA / f"{name}.json"
    graph = load_graph(path)
    code, out, _ = refc(capsys, "prove", path, "--no-verify", "--json")
    assert code == 1
    doc = json.loads(out)
    assert doc["verdict"] == "counterexample"
    cex = doc["counterexample"]
    assert cex["nodes"] == pair
    first, second = cex["schedules"]
    names = sorted(n.name for n in graph.nodes)
    for order in (first, second):
        assert sorted(order) == names  # a permutation of all nodes
        check_schedule(graph, order)  # legal
    a, b = pair
    assert first.index(a) < first.index(b) and second.index(b) < second.index(a)
    assert doc["confirmation"]["outcome"] == "undefined"
    # the plain form says the same, with the two schedules side by side and the rule
    code, out, _ = refc(capsys, "prove", path, "--no-verify")
    assert code == 1
    assert "counterexample" in out and "schedule 1" in out and "schedule 2" in out
    assert f"refc check rejects this graph: {rule}" in out
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert len(rows) == len(names)


@pytest.mark.parametrize("name", ["foreign_state", "two_saves", "save_into_constant"])
def test_without_no_verify_an_invalid_graph_is_reported_as_check_does(capsys, name):
    path = PROVE_DATA / f"{name}.json"
    _, check_out, _ = refc(capsys, "check", path)
    code, out, _ = refc(capsys, "prove", path)
    assert code == 1
    assert out.startswith(check_out)
    assert "--no-verify" in out
    code, out, _ = refc(capsys, "prove", path, "--json")
    assert code == 1
    assert json.loads(out)["verdict"] == "invalid"


def test_the_mutant_that_drops_save_edges_is_caught_and_confirmed(capsys):
    code, out, _ = refc(capsys, "prove", ROOT / "examples" / "read_then_save.json", "--mutant", "sched-drop-save-war", "--json")
    assert code == 1
    doc = json.loads(out)
    assert doc["counterexample"]["storage"] == "A"
    assert sorted(doc["counterexample"]["nodes"]) == ["late", "s"]
    assert doc["confirmation"]["outcome"] == "miscompile"


def test_a_data_cycle_with_no_verify_is_exit_1_with_g1(capsys):
    code, out, _ = refc(capsys, "prove", INVALID / "G-1.cycle.json", "--no-verify")
    assert code == 1
    assert "G-1" in out and "cycle" in out


def test_a_timeout_is_exit_3(capsys, tmp_path):
    path = tmp_path / "big.json"
    dump_graph(large_graph(500), path)
    code, out, _ = refc(capsys, "prove", path, "--engine", "z3", "--timeout", "0.000001", "--json")
    assert code == 3
    assert json.loads(out)["verdict"] == "inconclusive"
    code, out, _ = refc(capsys, "prove", path, "--engine", "both", "--timeout", "0.000001")
    assert code == 3
    assert "inconclusive" in out and "not proved" in out


def test_a_proof_is_bounded_in_time_by_default(capsys, monkeypatch):
    """A large legal graph must not hold refc for ever: without --timeout the
    proof gets 60 s, past which it is inconclusive (exit 3)."""
    import refcompiler.proofs

    given = []
    real = refcompiler.proofs.prove
    monkeypatch.setattr(refcompiler.proofs, "prove", lambda graph, **kw: given.append(kw["timeout"]) or real(graph, **kw))
    assert refc(capsys, "prove", ROOT / "examples" / "read_then_save.json")[0] == 0
    assert given == [60.0]


def test_disagreeing_deciders_are_exit_4(capsys, monkeypatch):
    monkeypatch.setattr(reach, "decide", lambda problem, *, deadline=None: Decision("reach", {p: Order.UNORDERED for p in problem.pairs}))
    code, _, err = refc(capsys, "prove", ROOT / "examples" / "read_then_save.json")
    assert code == 4
    assert "disagree" in err


@pytest.mark.parametrize(
    "argv",
    [["--engine", "dfs"], ["--timeout", "0"], ["--timeout", "soon"], ["--mutant", "no-such-mutant"]],
)
def test_bad_usage_is_exit_2(capsys, argv):
    code, _, err = refc(capsys, "prove", ROOT / "examples" / "read_then_save.json", *argv)
    assert code == 2
    assert err.strip()


def test_a_malformed_graph_is_exit_2(capsys):
    code, _, err = refc(capsys, "prove", ROOT / "tests" / "data" / "malformed" / "not_json.json")
    assert code == 2
    assert "not_json.json" in err


def test_bench_proofs_runs_small_sizes(capsys):
    code, out, _ = refc(capsys, "bench", "--proofs", "--sizes", "10,60", "--json")
    assert code == 0
    data = json.loads(out)["proofs"]
    assert [r["nodes"] for r in data["graphs"]] == [10, 60]
    small, larger = data["graphs"]
    for row in data["graphs"]:
        assert {row[e]["verdict"] for e in ("reach", "z3", "both")} == {"proved"}
    assert small["enumerate"]["verdict"] == "proved" and small["enumerate"]["orders"] > 1
    assert larger["enumerate"]["orders"] is None  # past --enumerate-max-nodes
    assert all(r["optimal_peak"] <= r["allocator_peak"] for r in data["allocation"])
    code, out, _ = refc(capsys, "bench", "--proofs", "--sizes", "10")
    assert code == 0
    assert "reach s" in out and "z3/reach" in out and "optimal peak" in out


def test_the_console_script_prints_no_traceback():
    result = subprocess.run(
        [sys.executable, "-m", "refc.cli", "prove", str(PROVE_DATA / "two_saves.json"), "--no-verify"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    assert "save_sum" in result.stdout
