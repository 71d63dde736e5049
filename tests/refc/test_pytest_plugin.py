"""The pytest plugin (`pytest --refc-corpus DIR`), run as a user runs it, outside the repository."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tests.refc.test_api import ROOT, user_pytest


def test_a_campaign_directory_is_collected_as_its_cases_only(tmp_path):
    out = tmp_path / "nightly"
    (out / "cases").mkdir(parents=True)
    (out / "bugs" / "TGT-2.target.save").mkdir(parents=True)
    shutil.copy(ROOT / "corpus" / "example.read_then_save.json", out / "cases")
    shutil.copy(ROOT / "examples" / "read_then_save.json", out / "bugs" / "TGT-2.target.save" / "graph.json")
    (out / "bugs" / "TGT-2.target.save" / "finding.json").write_text('{"kind": "discrepancy"}')
    (out / "summary.json").write_text('{"format": "refc-fuzz-summary/1"}')
    (out / "junit.xml").write_text("<testsuites/>")
    done = user_pytest(tmp_path, "--refc-corpus", "nightly")
    assert done.returncode == 0, done.stdout[-3000:]
    collected = re.findall(r"^PASSED (\S+)", done.stdout, re.M)
    assert collected == ["nightly/cases/example.read_then_save.json::example.read_then_save"], done.stdout[-3000:]


def test_a_failing_case_prints_the_replay_command_that_runs_it(tmp_path):
    """A case naming the user's pass needs --allow-plugin to replay, and one
    replayed under --refc-mutant needs --mutant: the printed command has both."""
    (tmp_path / "my_passes.py").write_text("def wrong(program):\n    raise ValueError('boom')\n\nPIPELINE = [wrong]\n")
    (tmp_path / "corpus").mkdir()
    case = (ROOT / "corpus" / "example.read_then_save.json").read_text().replace('"pipeline": "O2"', '"pipeline": "my_passes:PIPELINE"')
    assert "my_passes:PIPELINE" in case
    (tmp_path / "corpus" / "mine.json").write_text(case)
    shutil.copy(ROOT / "corpus" / "reject.OWN-2.json", tmp_path / "corpus")
    done = user_pytest(tmp_path, "--refc-corpus", "corpus", "--refc-mutant", "verify-allow-foreign-state")
    assert done.returncode == 1, done.stdout[-3000:]
    assert re.search(r"^replay: refc replay \S*/corpus/mine.json --mutant verify-allow-foreign-state --allow-plugin my_passes$", done.stdout, re.M), done.stdout[-3000:]
    assert re.search(r"^replay: refc replay \S*/corpus/reject.OWN-2.json --mutant verify-allow-foreign-state$", done.stdout, re.M), done.stdout[-3000:]


def test_a_malformed_case_is_named_once(tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "bad.json").write_text('{"format": "refc-graph/1"}')
    done = user_pytest(tmp_path, "--refc-corpus", "corpus")
    assert done.returncode == 1
    assert re.search(r"^\S*corpus/bad.json: nodes: ", done.stdout, re.M), done.stdout[-3000:]
