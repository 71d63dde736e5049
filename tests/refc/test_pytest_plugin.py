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
