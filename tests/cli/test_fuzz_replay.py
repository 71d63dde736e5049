"""``refc fuzz`` and ``refc replay``: exit codes, outputs, messages.

In-process through ``refc.cli.main`` (fast), and a few subprocess
calls of the installed console script.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from refc.cli import COMMANDS, main

from fuzz.corpus import load_case

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TIMINGS = {"seconds", "cases_per_second", "schedules_per_second", "seconds_by_stage", "progress"}


def _summary(out: Path) -> dict:
    doc = json.loads((out / "summary.json").read_text())
    for key in TIMINGS:
        doc.pop(key)
    for entry in doc["signatures"]:
        entry.pop("seconds_to_find")
    return doc


def test_fuzz_and_replay_are_registered():
    assert "fuzz" in COMMANDS and "replay" in COMMANDS


def test_a_clean_count_bounded_campaign(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["fuzz", "--max-cases", "15", "--seed", "1", "--workers", "1", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("refc fuzz: ")
    assert "s elapsed: cases " in captured.err  # plain progress lines when not a terminal
    doc = _summary(out)
    assert doc["cases"] > 0 and doc["failures"] == 0 and doc["stopped_by"] == "cases"
    assert ET.parse(out / "junit.xml").getroot().tag == "testsuites"
    # the same seed and count give the same summary, timings aside
    again = tmp_path / "again"
    assert main(["fuzz", "--max-cases", "15", "--seed", "1", "--workers", "1", "--out", str(again)]) == 0
    assert _summary(again) == doc


def test_a_mutant_campaign_finds_a_case_that_replays(tmp_path, capsys):
    out = tmp_path / "out"
    # a mutant nearly every graph with an owner node kills: robust to generator changes
    code = main(["fuzz", "--mutant", "lower-state-no-writeback", "--max-cases", "20", "--seed", "1", "--workers", "1", "--out", str(out)])
    assert code == 1
    printed = capsys.readouterr().out
    assert "refc replay" in printed and "--mutant lower-state-no-writeback" in printed
    doc = _summary(out)
    assert doc["distinct_failures"] >= 1
    case_path = out / doc["signatures"][0]["case"]
    assert len(load_case(case_path).graph.nodes) <= 6
    assert main(["replay", str(case_path)]) == 0
    capsys.readouterr()
    assert main(["replay", "--mutant", "lower-state-no-writeback", str(case_path)]) == 0
    assert ": ok: kills lower-state-no-writeback" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--mutant", "no-such-mutant"], "unknown mutant 'no-such-mutant'"),
        (["--scheduler", "no_such_module:f"], "cannot import module"),
        (["--scheduler", "nonsense"], "unknown scheduler"),
        (["--pipeline", "no_such_pass"], "unknown pass"),
        (["--budget", "0"], "number of seconds above 0"),
        (["--budget", "soon"], "expected a number of seconds"),
        (["--workers", "0"], "needs 1 or more"),
        (["--max-cases", "-3"], "needs 1 or more"),
    ],
)
def test_fuzz_bad_usage_is_exit_2_without_a_traceback(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as e:
        code = main(["fuzz", "--max-cases", "1", "--out", str(tmp_path / "o"), *argv])
        raise SystemExit(code)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_fuzz_out_must_be_a_directory(tmp_path, capsys):
    file = tmp_path / "file"
    file.write_text("x")
    assert main(["fuzz", "--max-cases", "1", "--out", str(file)]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_replay_defaults_to_the_corpus(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert main(["replay", "-q"]) == 0
    assert "replayed" in capsys.readouterr().out


def test_replay_examples_and_a_failing_case(tmp_path, capsys):
    assert main(["replay", str(EXAMPLES)]) == 0
    doc = json.loads((EXAMPLES / "read_then_save.json").read_text())
    doc["expect"] = {"reject": "OWN-4"}  # a valid graph: the expectation is not met
    (tmp_path / "wrong.json").write_text(json.dumps(doc))
    assert main(["replay", str(tmp_path / "wrong.json"), str(EXAMPLES)]) == 1
    out = capsys.readouterr().out
    assert "wrong.json: regressed: expected reject OWN-4" in out and "1 regressed" in out


def test_replay_malformed_and_missing_input(tmp_path, capsys):
    doc = json.loads((EXAMPLES / "read_then_save.json").read_text())
    doc["expect"] = "maybe"
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    assert main(["replay", str(tmp_path / "bad.json")]) == 2
    assert "bad.json: malformed: expect:" in capsys.readouterr().out
    assert main(["replay", str(tmp_path / "missing.json")]) == 2
    (tmp_path / "empty").mkdir()
    assert main(["replay", str(tmp_path / "empty")]) == 2
    assert main(["replay", "--mutant", "nope", str(EXAMPLES)]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_the_console_script(tmp_path):
    out = tmp_path / "o"
    run = subprocess.run(
        ["refc", "fuzz", "--max-cases", "5", "--workers", "1", "--seed", "2", "--out", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert (out / "summary.json").exists() and (out / "junit.xml").exists()
    bad = subprocess.run([sys.executable, "-m", "refcompiler", "replay", str(tmp_path / "nope.json")],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert bad.returncode == 2 and "no such file" in bad.stderr and "Traceback" not in bad.stderr


def test_a_finding_about_names_a_users_pass_made_prints_on_one_line(tmp_path, capsys, monkeypatch):
    # a pass naming an operand "x\ny" broke the finding's line in two (and its replay verdict)
    (tmp_path / "bad_names.py").write_text(
        "from refcompiler.ir import Opcode\n"
        "def rename(p):\n"
        "    return p.with_instrs([i.renamed({i.operands[0].name: 'x\\ny'}) if i.opcode is Opcode.KERNEL else i for i in p.instrs])\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # replay runs an allowed plug-in in a child process
    out = tmp_path / "out"
    assert main(["fuzz", "--pipeline", "bad_names:rename", "--max-cases", "10", "--out", str(out)]) == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  IR-1 at compile by bad_names.rename: ")]
    assert len(lines) == 1 and "x\\ny" in lines[0], lines
    (case,) = (out / "cases").glob("*.json")
    assert main(["replay", str(case), "--allow-plugin", "bad_names"]) == 1
    verdict = [line for line in capsys.readouterr().out.splitlines() if line.startswith(str(case))]
    assert len(verdict) == 1 and "x\\ny" in verdict[0], verdict
