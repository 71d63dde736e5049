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


def test_fuzz_a_planted_wrong_target_writes_cases_and_bug_folders(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("PYTHONPATH", raising=False)  # else the replay command carries it (test_plugins)
    code, out, err = refc(capsys, "fuzz", "--target", FAKE + "ALIASING", "--max-cases", "20", "--workers", "1", "--out", tmp_path)
    assert code == 1, out
    first = err.splitlines()[0]  # what runs: the target, not refc's schedulers and pipeline
    assert f"; target {FAKE}ALIASING;" in first and "scheduler" not in first and "pipeline" not in first, first
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert any(s["signature"]["invariant"] == "TGT-3" for s in doc["signatures"]), doc["signatures"]
    bugs = list((tmp_path / "bugs").iterdir())
    assert bugs and all((b / "finding.json").exists() and (b / "program.txt").exists() for b in bugs)
    assert "bug folder" in out
    # the fake target's own file is program.txt: no repro.py to run is printed
    assert "/repro.py" not in out and "(no repro.py: the target writes none)" in out and "program.txt" in out, out
    # the case records the target; replay re-runs it (a module:attr target is a plug-in)
    entry = doc["signatures"][0]
    assert entry["reproduces"] is True and entry["reproduces_reason"] is None
    assert entry["replay"].endswith("--allow-plugin tests.refcompiler.targets.fake_targets")
    assert f"replay: refc replay {tmp_path / entry['case']} --allow-plugin tests.refcompiler.targets.fake_targets" in out
    case = json.loads((tmp_path / entry["case"]).read_text())
    assert case["target"]["name"] == FAKE + "ALIASING" and case["target"]["configurations"] == ["base", "reuse", "fast"]
    assert case["target"]["failing"] in case["target"]["configurations"]
    # with what it was found: refc's packages and what the target says it runs on
    assert {"refc", "numpy", "fake"} <= dict(case["versions"]).keys() and dict(case["versions"])["fake"] == "1", case["versions"]
    code, out, _ = refc(capsys, "replay", tmp_path / entry["case"])
    assert code == 2 and "needs plug-in tests.refcompiler.targets.fake_targets" in out
    code, out, _ = refc(capsys, "replay", tmp_path / entry["case"], "--allow-plugin", "tests.refcompiler.targets.fake_targets")
    assert code == 1 and "regressed" in out and "on target " + FAKE + "ALIASING" in out and "TGT-3" in out


def _target_case(tmp_path, graph, target):
    doc = json.loads(Path(graph).read_text())
    doc.update(expect="pass", target={"name": target, "configurations": [], "failing": None, "passing": None})
    (tmp_path / "case.json").write_text(json.dumps(doc))
    return tmp_path / "case.json"


def test_replay_of_a_built_in_target_case_runs_that_target(capsys, tmp_path):
    code, out, _ = refc(capsys, "replay", _target_case(tmp_path, SGD, "onnxruntime-pairs"))
    assert code == 0 and ": ok: pass" in out, out
    bug = Path(__file__).resolve().parents[2] / "docs" / "bugs" / "tvm-inplace-scalar-constant" / "graph.json"
    code, out, _ = refc(capsys, "replay", _target_case(tmp_path, bug, "tvm"))
    assert code == 1 and "on target tvm" in out and "TGT-4" in out and "In-place index" in out, out
    code, out, _ = refc(capsys, "replay", _target_case(tmp_path, SGD, "no-such-target"))
    assert code == 2 and "malformed: target: unknown target 'no-such-target'" in out


def test_run_of_a_target_case_runs_that_target_and_compile_imports_none(capsys, tmp_path):
    """`refc run CASE` of a case found against a plug-in target asked for
    --allow-plugin and then ran refc's own compiler: it now runs the target, as
    replay does; compile (and run with --reference or another --target) never
    imports the case's target, so it needs no --allow-plugin."""
    case = _target_case(tmp_path, SGD, FAKE + "WRONG")
    module = FAKE.rstrip(":")
    code, _, err = refc(capsys, "run", case)
    assert code == 2 and f"--allow-plugin {module}" in err and "--target/--reference" in err
    code, out, err = refc(capsys, "run", case, "--allow-plugin", module)
    assert code == 1 and "TGT-1 reference" in out and f"as the case records: target {FAKE}WRONG" in err, (out, err)
    code, out, _ = refc(capsys, "run", case, "--target", "onnxruntime-pairs", "--runs", "1")
    assert code == 0 and "agrees" in out, out
    # --config chooses among the recorded target's configurations (it asked for --target)
    code, out, err = refc(capsys, "run", case, "--allow-plugin", module, "--config", "base")
    assert code == 1 and "1 configurations" in out and "TGT-1 reference" in out, (out, err)
    code, _, err = refc(capsys, "run", case, "--reference", "--config", "base")
    assert code == 2 and "--reference runs none" in err, err
    code, out, _ = refc(capsys, "compile", case)
    assert code == 0 and out.startswith('program "sgd_momentum"'), out


def test_fuzz_onnxruntime_finds_nothing_on_a_few_graphs(capsys, tmp_path):
    code, out, _ = refc(capsys, "fuzz", "--target", "onnxruntime-pairs", "--max-cases", "10", "--workers", "1", "--out", tmp_path)
    assert code == 0, out


def test_bench_target(capsys):
    code, out, _ = refc(capsys, "bench", "--target", "--target-graphs", "5", "--target-name", "onnxruntime-pairs", "--json")
    data = json.loads(out)["target"]
    assert code == 0 and data["graphs"] == 5 and data["configurations"] == 8 and data["graphs_per_second"] > 0


def test_the_campaign_summary_counts_configurations_refusals_and_graphs_per_second(capsys, tmp_path):
    code, out, _ = refc(capsys, "fuzz", "--target", FAKE + "REFUSES", "--max-cases", "6", "--workers", "1", "--out", tmp_path)
    assert code == 0, out
    t = json.loads((tmp_path / "summary.json").read_text())["target"]
    assert (t["name"], t["configurations"], t["graphs"], t["refused"]) == (FAKE + "REFUSES", 3, 6, 6)
    assert t["refusal_reasons"] == [["planted refusal", 6]] and t["graphs_per_second"] > 0 and t["compiled_graphs_per_second"] == 0
    assert "3 configurations; 6 graphs" in out and "6 refused, 0 compiled" in out and "refused 6x: planted refusal" in out
    code, out, _ = refc(capsys, "fuzz", "--target", FAKE + "REFERENCE", "--max-cases", "4", "--workers", "1", "--out", tmp_path / "b")
    t = json.loads((tmp_path / "b" / "summary.json").read_text())["target"]
    assert code == 0 and t["refused"] == 0 and t["graphs"] == 4 and t["refusal_reasons"] == []
    code, out, _ = refc(capsys, "fuzz", "--max-cases", "2", "--workers", "1", "--out", tmp_path / "c")
    assert "target" not in json.loads((tmp_path / "c" / "summary.json").read_text())


def test_a_targets_own_code_failing_while_its_bug_folders_are_written_is_named_not_a_crash(capsys, tmp_path, monkeypatch):
    # a user's target whose bug_files() raised (or whose versions() exited) ended refc fuzz with a
    # traceback after the summary was written; the cases stand, and the target's fault is named
    (tmp_path / "b4_targets.py").write_text(
        "import sys\n"
        "from tests.refcompiler.targets.fake_targets import Aliasing\n"
        "class NoFiles(Aliasing):\n"
        "    def bug_files(self, program, failing, passing):\n"
        "        raise RuntimeError('no files today')\n"
        "class ExitsInVersions(Aliasing):\n"
        "    def versions(self):\n"
        "        sys.exit(3)\n"
        "NO_FILES, EXITS = NoFiles(), ExitsInVersions()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, err = refc(capsys, "fuzz", "--target", "b4_targets:NO_FILES", "--max-cases", "20", "--workers", "1", "--out", tmp_path / "a")
    assert code == 1 and (tmp_path / "a" / "summary.json").exists() and list((tmp_path / "a" / "cases").iterdir()), (out, err)
    assert "no bug folder for cases/" in err and "target 'b4_targets:NO_FILES''s bug_files() raised RuntimeError: no files today" in err, err
    code, out, err = refc(capsys, "fuzz", "--target", "b4_targets:EXITS", "--max-cases", "20", "--workers", "1", "--out", tmp_path / "b")
    assert code == 1, (out, err)
    bugs = list((tmp_path / "b" / "bugs").iterdir())
    assert bugs and all("python==" in (b / "versions.txt").read_text() for b in bugs)
