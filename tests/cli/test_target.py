"""``refc run --target``, ``refc fuzz --target`` and ``refc bench --target``."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.inprocess import refc

SGD = Path(__file__).resolve().parents[2] / "examples" / "sgd_momentum.json"
FAKE = "tests.refcompiler.targets.fake_targets:"


def test_run_prints_every_configuration_and_agrees(capsys):
    code, out, _ = refc(capsys, "run", SGD, "--target", "onnxruntime")
    assert code == 0, out
    lines = out.splitlines()
    assert "32 configurations, after 2 runs" in lines[0]
    sums = {line.split(":", 1)[1].strip() for line in lines[1:33]}
    assert len(sums) == 1 and lines[33].strip().startswith("reference:") and lines[33].split(":", 1)[1].strip() in sums
    assert "agrees" in lines[-1]


def test_run_one_configuration(capsys):
    code, out, _ = refc(capsys, "run", SGD, "--target", "onnxruntime", "--config", "all.mem_pattern=off.arena=off.parallel", "--runs", "3")
    assert code == 0 and "1 configurations, after 3 runs" in out


def test_run_a_planted_wrong_target_is_exit_1(capsys):
    code, out, _ = refc(capsys, "run", SGD, "--target", FAKE + "WRONG")
    assert code == 1 and "TGT-1 reference" in out


def test_a_missing_package_or_unknown_name_is_exit_2_with_the_pip_command(capsys):
    code, _, err = refc(capsys, "run", SGD, "--target", FAKE + "MISSING")
    assert code == 2 and "pip install not-a-real-package" in err and "not_a_real_package" in err
    code, _, err = refc(capsys, "fuzz", "--target", FAKE + "MISSING", "--max-cases", "1")
    assert code == 2 and "pip install" in err
    code, _, err = refc(capsys, "run", SGD, "--target", "onnxruntime", "--config", "fastest")
    assert code == 2 and "disable.mem_pattern=on.arena=on.sequential" in err


def test_fuzz_a_planted_wrong_target_writes_cases_and_bug_folders(capsys, tmp_path):
    code, out, _ = refc(capsys, "fuzz", "--target", FAKE + "ALIASING", "--max-cases", "20", "--workers", "1", "--out", tmp_path)
    assert code == 1, out
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert any(s["signature"]["invariant"] == "TGT-3" for s in doc["signatures"]), doc["signatures"]
    bugs = list((tmp_path / "bugs").iterdir())
    assert bugs and all((b / "finding.json").exists() and (b / "program.txt").exists() for b in bugs)
    assert "bug folder" in out


def test_fuzz_onnxruntime_finds_nothing_on_a_few_graphs(capsys, tmp_path):
    code, out, _ = refc(capsys, "fuzz", "--target", "onnxruntime-pairs", "--max-cases", "10", "--workers", "1", "--out", tmp_path)
    assert code == 0, out


def test_bench_target(capsys):
    code, out, _ = refc(capsys, "bench", "--target", "--target-graphs", "5", "--target-name", "onnxruntime-pairs", "--json")
    data = json.loads(out)["target"]
    assert code == 0 and data["graphs"] == 5 and data["configurations"] == 8 and data["graphs_per_second"] > 0
