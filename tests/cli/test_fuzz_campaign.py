"""``refc fuzz`` as a CI job sees it: --out checked first, nothing found lost
on SIGINT/SIGTERM, a killed worker costs only its chunk (subprocesses of the
console script)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from refc.cli import main
from tests.cli.inprocess import refc

MUTANT = "dse-drop-state-write"


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def _start(out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(["refc", "fuzz", "--mutant", MUTANT, "--workers", "2", "--out", str(out), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_children(proc: subprocess.Popen, n: int) -> list[int]:
    deadline = time.time() + 30
    while len(kids := _children(proc.pid)) < n:
        assert time.time() < deadline and proc.poll() is None
        time.sleep(0.2)
    return kids


@pytest.mark.parametrize("sig, quiet_code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_the_workers_and_writes_a_complete_summary(tmp_path, sig, quiet_code):
    out = tmp_path / "out"
    proc = _start(out, "--budget", "60")
    kids = _wait_for_children(proc, 2)
    time.sleep(4)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    doc = json.loads((out / "summary.json").read_text())
    assert doc["interrupted"] == sig.name and doc["complete"] and doc["stopped_by"] == "interrupted"
    assert proc.returncode == (1 if doc["distinct_failures"] else quiet_code), err
    for entry in doc["signatures"]:
        assert (out / entry["case"]).is_file()
    for pid in kids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert "Traceback" not in err


@pytest.mark.parametrize("gap", [0.3, 0.01])
def test_a_double_ctrl_c_still_writes_the_final_summary_and_leaves_no_worker(tmp_path, gap):
    # as a terminal sends it: SIGINT to the whole process group, twice; the
    # second lands while the first one's wind-down runs (gap 0.01) or after it
    out = tmp_path / "out"
    proc = subprocess.Popen(["refc", "fuzz", "--workers", "2", "--budget", "60", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    kids = _wait_for_children(proc, 2)
    time.sleep(3)
    os.killpg(proc.pid, signal.SIGINT)
    time.sleep(gap)
    os.killpg(proc.pid, signal.SIGINT)
    started = time.time()
    _, err = proc.communicate(timeout=30)
    assert time.time() - started < 10  # no waiting on the running chunks
    doc = json.loads((out / "summary.json").read_text())
    assert doc["complete"] and doc["interrupted"] == "SIGINT" and doc["stopped_by"] == "interrupted"
    # a second SIGINT that comes after refc is done (it may be, within 0.3 s)
    # ends the exiting interpreter by SIGINT: what a shell reports as 130 too
    assert proc.returncode in ((1,) if doc["distinct_failures"] else (130, -signal.SIGINT)), err
    assert "refc: interrupted" not in err and "Traceback" not in err
    assert "refc fuzz: interrupted by SIGINT" in err
    for pid in kids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not list(out.glob(".summary.json.*"))  # written atomically: no temporary file left


def test_a_campaign_started_with_sigint_ignored_keeps_ignoring_it(tmp_path):
    # as `nohup refc fuzz` or `refc fuzz &` in a script starts it: a Ctrl-C meant for the
    # foreground job ended the campaign, whose handler replaced the ignoring one
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "refc", "fuzz", "--workers", "1", "--budget", "5", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    deadline = time.time() + 30
    while not (out / "summary.json").exists():  # the campaign runs: its first chunk is written
        assert time.time() < deadline and proc.poll() is None
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    doc = json.loads((out / "summary.json").read_text())
    assert (proc.returncode, doc["interrupted"], doc["stopped_by"]) == (0, None, "budget"), err


def test_a_killed_worker_costs_only_its_chunk_and_leaves_the_campaign_inconclusive(tmp_path):
    out = tmp_path / "out"
    proc = _start(out, "--budget", "8")
    victim = _wait_for_children(proc, 2)[0]
    os.kill(victim, signal.SIGKILL)
    printed, err = proc.communicate(timeout=60)
    doc = json.loads((out / "summary.json").read_text())
    assert doc["complete"] and doc["interrupted"] is None and doc["stopped_by"] == "budget"
    died = [lost for lost in doc["lost_chunks"] if lost["kind"] == "died"]
    assert [lost["reason"] for lost in died] == ["the worker died (exit code -9)"]
    assert "lost chunk" in printed and "Traceback" not in err
    assert doc["cases"] > 0
    # nothing found is not "passes": a worker's death may be the compiler's crash
    if doc["distinct_failures"]:
        assert proc.returncode == 1
    else:
        assert proc.returncode == 3 and "inconclusive: nothing found, but a worker died" in err


def test_out_is_checked_before_any_work(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["fuzz", "--max-cases", "1", "--out", str(blocker)]) == 2
    assert main(["fuzz", "--max-cases", "1", "--out", str(blocker / "sub")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("refc fuzz: --out ") for line in err)


def test_an_earlier_campaign_is_never_mixed_in(tmp_path, capsys):
    out = tmp_path / "out"
    args = ["fuzz", "--max-cases", "2", "--workers", "1", "--out", str(out)]
    assert main(args) == 0
    (out / "cases").mkdir()
    (out / "cases" / "old.json").write_text("{}")
    (out / "report.html").write_text("<p>the earlier campaign's findings</p>")  # ``refc report``'s page of it
    (out / "bugs" / "TGT-2.target.x").mkdir(parents=True)  # a target campaign's bug folder
    capsys.readouterr()
    assert main(args) == 0
    assert "moved the earlier campaign's outputs" in capsys.readouterr().err
    (archive,) = out.glob("earlier-*")
    assert (archive / "summary.json").is_file() and (out / "summary.json").is_file()  # the new run's
    for name in ("cases/old.json", "report.html", "bugs/TGT-2.target.x"):
        assert (archive / name).exists() and not (out / name).exists()
    (out / "cases").mkdir()
    (out / "report.html").write_text("<p>stale</p>")
    assert main([*args, "--clean"]) == 0
    assert not (out / "cases").exists() and not (out / "report.html").exists()
    assert len(list(out.glob("earlier-*"))) == 1  # the folders earlier outputs were moved to are kept


def test_the_summary_is_written_after_every_chunk():
    from fuzz.campaign import CampaignConfig, run_campaign

    seen: list[tuple[int, bool]] = []
    config = CampaignConfig(budget=None, max_cases=6, chunk_cases=2, seed=0, out=None)
    run_campaign(config, on_change=lambda s: seen.append((s.chunks, s.phase == "done")))
    assert seen == [(1, False), (2, False), (3, False), (3, True)]


def test_github_actions_outputs_and_a_stable_junit(tmp_path, capsys, monkeypatch):
    import xml.etree.ElementTree as ET

    step = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    out = tmp_path / "out"
    code = main(["fuzz", "--mutant", "lower-state-no-writeback", "--max-cases", "20", "--seed", "1", "--workers", "1", "--out", str(out)])
    assert code == 1
    printed = capsys.readouterr().out
    errors = [line for line in printed.splitlines() if line.startswith("::error file=")]
    assert errors and all("replay%3A" not in e and "refc replay" in e for e in errors)
    report = step.read_text()
    assert report.startswith("### refc fuzz: found failures") and "`refc replay " in report
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    assert all(p.get("value") != "None" for p in suite.iter("property"))
    assert all(float(tc.get("time")) > 0 for tc in suite.iter("testcase"))

    clean = tmp_path / "clean"
    assert main(["fuzz", "--max-cases", "3", "--workers", "1", "--out", str(clean)]) == 0
    names = [tc.get("name") for tc in ET.parse(clean / "junit.xml").getroot().iter("testcase")]
    assert names == ["no failure"]
    assert step.read_text().count("### refc fuzz") == 2


def test_version_and_a_random_seed(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("refc ")
    assert main(["fuzz", "--max-cases", "1", "--seed", "random", "--workers", "1", "--out", str(tmp_path / "o")]) == 0
    first = capsys.readouterr().err.splitlines()[0]
    seed = json.loads((tmp_path / "o" / "summary.json").read_text())["seed"]
    assert first.startswith(f"refc fuzz: seed {seed}, 1 worker; ") and "at most 1 case;" in first


def test_max_dim_reaches_the_generator_and_the_provenance_and_is_bounded(tmp_path, capsys):
    from fuzz.campaign.config import MAX_DIM_LIMIT, CampaignConfig
    from fuzz.campaign.failure import found_by

    assert CampaignConfig().max_dim == 4 and MAX_DIM_LIMIT == 64  # the numbers --max-dim's help states
    assert found_by(CampaignConfig(max_dim=16)) == "refc fuzz --seed 0 --max-dim 16"
    assert main(["fuzz", "--max-cases", "20", "--max-dim", "12", "--workers", "1", "--out", str(tmp_path / "o")]) == 0
    doc = json.loads((tmp_path / "o" / "summary.json").read_text())  # how the campaign was set up, for a CI reader
    assert (doc["max_dim"], doc["max_nodes"], doc["symbolic"], doc["case_seconds"]) == (12, 10, "auto", 60.0)
    with pytest.raises(SystemExit) as refused:  # argparse's own refusal
        main(["fuzz", "--max-cases", "1", "--max-dim", "1", "--out", str(tmp_path / "o")])
    assert refused.value.code == 2
    assert main(["fuzz", "--max-cases", "1", "--max-dim", "65", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "--max-dim: needs 2 or more, got 1" in err.replace("argument ", "") and "max_dim (--max-dim) must be from 2 to 64" in err


def test_a_finding_that_does_not_reproduce_says_why_in_the_final_lines_and_the_report(capsys, tmp_path, monkeypatch):
    import fuzz.campaign.failure

    monkeypatch.setattr(fuzz.campaign.failure, "_replay", lambda config, case, mutant: None)  # as a scheduler that depends on more than the seed
    out = tmp_path / "out"
    code, printed, _ = refc(capsys, "fuzz", "--mutant", "lower-state-no-writeback", "--max-cases", "20", "--seed", "1", "--workers", "1", "--out", out)
    assert code == 1
    entry = json.loads((out / "summary.json").read_text())["signatures"][0]
    assert entry["reproduces"] is False and entry["reproduces_reason"] == "replaying the stored case finds nothing"
    assert f"  {entry['text']}: {entry['explanation']} (not confirmed on replay: replaying the stored case finds nothing)" in printed.splitlines()
    assert refc(capsys, "report", out)[0] == 0
    assert "reproduces on replay: False (replaying the stored case finds nothing)" in (out / "report.html").read_text()


def test_the_default_case_time_limit_leaves_a_short_budget_time_to_shrink_a_hang():
    from refc.cli.fuzz import case_seconds

    assert case_seconds(None, 60.0, generated=True) == 20.0  # a third of the budget
    assert case_seconds(None, 30.0, generated=True) == 20.0  # never under 20 s
    assert case_seconds(None, 600.0, generated=True) == 60.0
    assert case_seconds(None, None, generated=True) == 60.0  # --max-cases alone: no budget to share
    assert case_seconds(None, 60.0, generated=False) == 60.0  # --graph G (maybe large) or a target
    assert case_seconds(7.5, 60.0, generated=True) == 7.5  # given: as given

