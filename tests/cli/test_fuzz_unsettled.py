"""What a campaign learnt but did not find is said, not dropped: programs the
symbolic stage neither proved nor refuted are in the summary, the final lines,
junit.xml (no failure), the GitHub step summary and ``refc report``'s page,
each kept case under OUT/inconclusive/ with the ``refc validate`` command that
shows it again; the exit code stays 0."""

from __future__ import annotations

import json
import shlex
import xml.etree.ElementTree as ET

from tests.cli.inprocess import refc
from tests.fuzz.campaign.test_unsettled import ADD, PIPELINE


def test_a_campaign_reports_what_the_symbolic_stage_left_unsettled_and_still_exits_0(capsys, tmp_path, monkeypatch):
    step = tmp_path / "step.md"
    monkeypatch.delenv("PYTHONPATH", raising=False)  # a campaign's commands carry the PYTHONPATH= it ran with
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    graph, out = tmp_path / "add.json", tmp_path / "out"
    graph.write_text(json.dumps(ADD))
    code, printed, _ = refc(capsys, "fuzz", "--graph", graph, "--pipeline", PIPELINE, "--max-cases", "4", "--workers", "1", "--out", out)
    assert code == 0
    doc = json.loads((out / "summary.json").read_text())
    unsettled = doc["symbolic_inconclusive"]
    # the four cases all draw fresh seeds, which a user's pass sees (a program's buffers carry them):
    # four graphs, not the one graph with other inputs, each of whose programs is validated
    assert doc["distinct_failures"] == 0 and unsettled["programs"] >= unsettled["cases"] == 4 and doc["cases"] == 4
    [kept] = unsettled["kept"]  # every case is the one graph: one kind
    assert kept["case"] == "inconclusive/1.json" and kept["pipeline"] == PIPELINE and kept["order"] == ["m", "s"]
    assert "concrete run agrees" in kept["reason"] and (out / kept["case"]).is_file() and not (out / "cases").exists()
    lines = printed.splitlines()
    assert lines[1].startswith(f"  inconclusive, not a finding: symbolic validation neither proved nor refuted {unsettled['programs']} program")
    assert lines[2] == f"    pipeline {PIPELINE}, the topo scheduler's order: {kept['reason']} (first at run 1: o[0])"
    assert lines[3] == f"      case {out / kept['case']} (2 nodes); validate: {kept['validate']}"

    # the command shows it again: inconclusive (exit 3), as the campaign saw it
    words = shlex.split(kept["validate"])
    assert words[:5] == ["refc", "validate", str(out / kept["case"]), "--timeout", "2"]
    assert words[5:] == ["--allow-plugin", PIPELINE.partition(":")[0]]  # the user's pass, allowed
    code, said, _ = refc(capsys, *words[1:])
    assert code == 3 and "concrete run agrees" in said

    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    assert (suite.get("failures"), suite.get("errors")) == ("0", "0")
    assert {p.get("name"): p.get("value") for p in suite.iter("property")}["symbolic_inconclusive"] == str(unsettled["programs"])
    assert kept["validate"] in suite.find("system-out").text
    assert "inconclusive, not a finding" in step.read_text() and f"`{kept['validate']}`" in step.read_text()

    assert refc(capsys, "report", out)[0] == 0
    page = (out / "report.html").read_text()
    assert "<h2>Inconclusive (not findings)</h2>" in page and f"neither proved nor refuted {unsettled['programs']} program" in page
    assert "0 distinct findings: nothing failed" in page

    code, said, _ = refc(capsys, "replay", out)  # not findings: replay of the campaign reads its cases/ only
    assert code == 0 and said.startswith("replayed 0 cases")

    assert refc(capsys, "fuzz", "--max-cases", "1", "--workers", "1", "--out", out)[0] == 0  # a new campaign moves them aside
    assert not (out / "inconclusive").exists() and list(out.glob("earlier-*/inconclusive/1.json"))
