"""The pytest plugin (`pytest --refc-corpus DIR`), run as a user runs it, outside the repository."""

from __future__ import annotations

import json
import os
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
    stale = json.loads((ROOT / "corpus" / "example.read_then_save.json").read_text())
    stale["mutant"] = "verify-allow-foreign-state"  # recorded against it, and no longer kills it
    (tmp_path / "corpus" / "stale.json").write_text(json.dumps(stale))
    done = user_pytest(tmp_path, "--refc-corpus", "corpus")
    assert done.returncode == 1, done.stdout[-3000:]
    assert re.search(r"^replay: refc replay \S*/corpus/mine.json --allow-plugin my_passes$", done.stdout, re.M), done.stdout[-3000:]
    done = user_pytest(tmp_path, "--refc-corpus", "corpus", "--refc-mutant", "verify-allow-foreign-state")
    assert done.returncode == 1, done.stdout[-3000:]
    assert re.search(r"^replay: refc replay \S*/corpus/stale.json --mutant verify-allow-foreign-state$", done.stdout, re.M), done.stdout[-3000:]


def test_against_a_mutant_a_case_that_kills_it_passes_as_refc_replay_says(tmp_path):
    """`refc replay corpus --mutant M` says 'ok: kills M'; the plugin failed those items."""
    (tmp_path / "corpus").mkdir()
    for name in ("mutant.sched-drop-save-war", "example.read_then_save"):
        shutil.copy(ROOT / "corpus" / f"{name}.json", tmp_path / "corpus")
    done = user_pytest(tmp_path, "--refc-corpus", "corpus", "--refc-mutant", "sched-drop-save-war")
    assert done.returncode == 0, done.stdout[-3000:]
    assert len(re.findall(r"^PASSED ", done.stdout, re.M)) == 2, done.stdout[-3000:]


def test_a_malformed_case_is_named_once(tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "bad.json").write_text('{"format": "refc-graph/1"}')
    done = user_pytest(tmp_path, "--refc-corpus", "corpus")
    assert done.returncode == 1
    assert re.search(r"^\S*corpus/bad.json: nodes: ", done.stdout, re.M), done.stdout[-3000:]


def test_a_case_naming_a_users_code_imports_it_only_when_allowed(tmp_path):
    """A case file is data: a pipeline module it names is imported only with
    --refc-allow-plugin, as refc replay's --allow-plugin."""
    (tmp_path / "my_passes.py").write_text(
        "import pathlib\npathlib.Path('imported').write_text('yes')\n\ndef keep(program):\n    return program\n\nPIPELINE = [keep]\n"
    )
    (tmp_path / "corpus").mkdir()
    case = (ROOT / "corpus" / "example.read_then_save.json").read_text().replace('"pipeline": "O2"', '"pipeline": "my_passes:PIPELINE"')
    (tmp_path / "corpus" / "mine.json").write_text(case)
    done = user_pytest(tmp_path, "--refc-corpus", "corpus")
    assert done.returncode == 1, done.stdout[-3000:]
    assert "needs plug-in my_passes: the case names a user's code (add --refc-allow-plugin my_passes to run it)" in done.stdout
    assert not (tmp_path / "imported").exists()
    done = user_pytest(tmp_path, "--refc-corpus", "corpus", "--refc-allow-plugin", "my_passes")
    assert done.returncode == 0, done.stdout[-3000:]
    assert (tmp_path / "imported").read_text() == "yes"


def test_an_unknown_mutant_is_a_usage_error_not_a_pass(tmp_path):
    # a misspelt --refc-mutant replayed every case against no mutant, and the kill checks passed
    (tmp_path / "corpus").mkdir()
    shutil.copy(ROOT / "corpus" / "mutant.inplace-stencil.json", tmp_path / "corpus")
    done = user_pytest(tmp_path, "--refc-corpus", "corpus", "--refc-mutant", "inplace-stensil")
    assert done.returncode == 4 and "--refc-mutant: unknown mutant 'inplace-stensil'" in done.stdout + done.stderr, done.stdout[-3000:]


def test_a_case_file_that_is_no_regular_file_fails_as_refc_replay_says(tmp_path):
    """A link to nothing, a loop of links, a pipe and a link to a device among the
    cases are malformed for `refc replay DIR`; the plugin left them out (pytest
    collects regular files only: the run passed) or, for the loop, ended the
    collection with a RuntimeError from Path.resolve."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(ROOT / "corpus" / "example.read_then_save.json", corpus)
    (corpus / "dangling.json").symlink_to(tmp_path / "moved.json")
    (corpus / "loop.json").symlink_to(corpus / "loop.json")
    os.mkfifo(corpus / "pipe.json")
    (corpus / "zero.json").symlink_to("/dev/zero")
    done = user_pytest(tmp_path, "--refc-corpus", "corpus")
    assert done.returncode == 1, done.stdout[-3000:]
    assert re.findall(r"^PASSED (\S+)", done.stdout, re.M) == ["corpus/example.read_then_save.json::example.read_then_save"], done.stdout[-3000:]
    failed = sorted(re.findall(r"^FAILED corpus/(\w+)\.json", done.stdout, re.M))
    assert failed == ["dangling", "loop", "pipe", "zero"], done.stdout[-3000:]
    assert done.stdout.count(": malformed: ") >= 4
