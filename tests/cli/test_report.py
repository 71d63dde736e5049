"""``refc report``: a campaign's output as one self-contained HTML page, checked
in a real browser (headless Chromium) for what it shows."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.inprocess import refc

ROOT = Path(__file__).resolve().parents[2]
MUTANT = "sched-drop-save-war"
CASES = {"SCH-2.proof.save.json": "corpus/mutant.sched-drop-save-war.json", "SEM-1.run.relu-save.json": "corpus/mutant.share-ignore-later-reads.json"}


def entry(case: str, invariant: str, seconds: float) -> dict:
    return {"signature": {"invariant": invariant, "stage": "proof", "kinds": ["save"]}, "text": f"{invariant} at proof [save]",
            "explanation": f"explanation of {case}", "case": f"cases/{case}", "nodes": 2, "nodes_before_reduction": 8,
            "reproduces": True, "passes_without_mutant": True, "seconds_to_find": seconds}


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    """What `refc fuzz --mutant ... --out DIR` writes, built from corpus cases (a
    real campaign that finds this takes too long for a unit test)."""
    out = tmp_path / "campaign"
    (out / "cases").mkdir(parents=True)
    for name, source in CASES.items():
        shutil.copy(ROOT / source, out / "cases" / name)
    summary = {"format": "refc-fuzz-summary/1", "seed": 1, "workers": 1, "mutant": MUTANT, "budget": None, "max_cases": 60,
               "schedulers": ["topo", "memory", "random"], "pipeline": "O2", "cases": 60, "invalid_cases": 12, "schedules": 1523,
               "failures": 3, "distinct_failures": 2, "signatures": [entry("SCH-2.proof.save.json", "SCH-2", 1.25), entry("SEM-1.run.relu-save.json", "SEM-1", 19.5)],
               "stopped_by": "cases", "seconds": 54.6, "cases_per_second": 1.1, "schedules_per_second": 27.9,
               "a_field_from_the_future": {"x": 1}}
    (out / "summary.json").write_text(json.dumps(summary))
    return out


def chromium_dom(page: Path) -> str:
    """The DOM of ``page`` after Chromium rendered it (no network, no profile)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    assert browser, "the report test needs Debian's chromium (.ci/run installs it)"
    profile = page.parent / "chromium-profile"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}", "--dump-dom"]
    done = subprocess.run([browser, *flags, page.as_uri()], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_report_shows_the_summary_findings_pictures_and_replay_commands_in_a_browser(capsys, out_dir):
    code, out, err = refc(capsys, "report", out_dir)
    page = out_dir / "report.html"
    assert (code, err) == (0, "") and out == f"refc report: wrote {page} (2 findings)\n"
    dom = chromium_dom(page)
    assert re.search(r'id="finding-count"[^>]*>2 distinct findings<', dom)
    replays = re.findall(r'<code class="replay">([^<]*)</code>', dom)
    assert replays == [f"refc replay {out_dir}/cases/{name} --mutant {MUTANT}" for name in CASES]
    sections = re.findall(r'<section class="finding".*?</section>', dom, re.S)
    assert len(sections) == 2 and all("<svg" in s and "the case's schedule" in s for s in sections)
    assert "explanation of SCH-2.proof.save.json" in sections[0] and "1523" in dom and "throughput" in dom
    # self-contained: nothing to fetch
    html = page.read_text()
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', html) and "<script" not in html and "<link" not in html


def test_a_bad_out_dir_is_exit_2_in_one_line(capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "summary.json").write_text('{"format": "refc-graph/1"}')
    for target, words in ((tmp_path / "absent", "not a directory"), (tmp_path / "empty", "no summary.json"), (tmp_path / "other", "not a campaign summary")):
        code, out, err = refc(capsys, "report", target)
        assert (code, out) == (2, "") and len(err.splitlines()) == 1 and words in err and str(target) in err


@pytest.mark.parametrize(
    "summary, field",
    [
        ({"format": "refc-fuzz-summary/9", "signatures": []}, "format: 'refc-fuzz-summary/9' is a summary format this refc does not read"),
        ({"format": "refc-fuzz-summary/1", "signatures": "x"}, "signatures: expected a list of findings"),
        ({"format": "refc-fuzz-summary/1", "signatures": [{}, 3]}, "signatures[1]: expected a finding"),
    ],
)
def test_a_summary_this_refc_cannot_read_is_exit_2_not_a_page_saying_nothing_failed(capsys, tmp_path, summary, field):
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    code, out, err = refc(capsys, "report", tmp_path)
    assert (code, out) == (2, "") and len(err.splitlines()) == 1 and field in err and str(tmp_path / "summary.json") in err
    assert not (tmp_path / "report.html").exists()


def test_a_missing_or_foreign_case_is_noted_and_a_progress_series_is_drawn(capsys, out_dir):
    summary = json.loads((out_dir / "summary.json").read_text())
    summary["signatures"][0]["case"] = "cases/gone.json"
    summary["signatures"][1]["case"] = "../outside.json"
    (out_dir.parent / "outside.json").write_text((ROOT / CASES["SCH-2.proof.save.json"]).read_text())
    summary["progress"] = [{"seconds": 10, "cases": 10, "schedules": 300}, {"seconds": 20, "cases": 30, "schedules": 600}, {"seconds": "x"}]
    (out_dir / "summary.json").write_text(json.dumps(summary))
    code, out, err = refc(capsys, "report", out_dir, "-o", out_dir / "r.html")
    html = (out_dir / "r.html").read_text()
    assert code == 0 and "cannot read the case" in html and f"the summary names no case file inside {out_dir}" in html
    assert "from the summary&#x27;s progress series" in html or "from the summary's progress series" in html
    assert html.count("<svg") == 1  # the chart only


def test_a_case_that_is_a_named_pipe_is_noted_not_waited_for(capsys, out_dir):
    # read_text on a pipe no one writes to blocked the report for ever
    import os

    summary = json.loads((out_dir / "summary.json").read_text())
    os.mkfifo(out_dir / "cases" / "pipe.json")
    summary["signatures"][0]["case"] = "cases/pipe.json"
    (out_dir / "summary.json").write_text(json.dumps(summary))
    code, out, err = refc(capsys, "report", out_dir, "-o", out_dir / "r.html")
    assert code == 0 and "pipe.json: not a regular file" in (out_dir / "r.html").read_text()


def test_a_link_planted_as_report_html_is_not_followed(capsys, out_dir, tmp_path):
    # the page was written through it, over the file it points at
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    (out_dir / "report.html").symlink_to(precious)
    code, out, err = refc(capsys, "report", out_dir)
    assert code == 2 and "is a symbolic link inside the output directory" in err and len(err.splitlines()) == 1
    assert precious.read_text() == "keep me"
    assert refc(capsys, "report", out_dir, "-o", out_dir / "elsewhere.html")[0] == 0  # a page the user names is written


def test_a_campaign_without_findings(capsys, out_dir):
    summary = json.loads((out_dir / "summary.json").read_text())
    summary.update(signatures=[], failures=0, distinct_failures=0, mutant=None)
    (out_dir / "summary.json").write_text(json.dumps(summary))
    assert refc(capsys, "report", out_dir)[0] == 0
    assert "0 distinct findings: nothing failed" in (out_dir / "report.html").read_text()


def _summary_rows(page: str) -> dict[str, str]:
    table = page[page.index('<table class="summary">'):]
    table = table[: table.index("</table>")]
    return dict(re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", table))


def test_a_target_campaign_shows_its_target_not_refcs_pipeline_and_schedules(capsys, out_dir):
    # it showed "pipeline under test O2", "schedules 0" and no word of the target fuzzed
    summary = json.loads((out_dir / "summary.json").read_text())
    summary.update(schedules=0, schedules_per_second=0.0, mutant=None,
                   target={"name": "onnxruntime", "configurations": 32, "graphs": 60, "refused": 4, "refusal_reasons": [],
                           "graphs_per_second": 1.1, "compiled_graphs_per_second": 1.0})
    (out_dir / "summary.json").write_text(json.dumps(summary))
    assert refc(capsys, "report", out_dir)[0] == 0
    rows = _summary_rows((out_dir / "report.html").read_text())
    assert rows["target"] == "onnxruntime" and rows["target configurations"] == "32" and rows["graphs the target refused"] == "4"
    assert rows["graphs per second"] == "1.1" and rows["cases"] == "60"
    assert not {"pipeline under test", "schedulers", "schedules", "schedules per second"} & rows.keys(), rows
    summary["target"] = "not an object"  # a summary's data, not a crash: shown as refc's own campaign
    (out_dir / "summary.json").write_text(json.dumps(summary))
    assert refc(capsys, "report", out_dir)[0] == 0
    assert "pipeline under test" in _summary_rows((out_dir / "report.html").read_text())


def test_without_graphviz_the_report_is_written_and_says_what_to_install(capsys, out_dir, monkeypatch):
    monkeypatch.setenv("PATH", str(out_dir))
    assert refc(capsys, "report", out_dir)[0] == 0
    html = (out_dir / "report.html").read_text()
    assert "apt-get install graphviz" in html and html.count("<svg") == 1 and html.count('<code class="replay">') == 2


def test_a_case_of_the_users_code_replays_with_its_module_allowed(capsys, out_dir):
    """A campaign over `--pipeline my_passes:PIPELINE` (no mutant): the page's replay
    command is the one that runs the case (`refc replay` refuses a plug-in case
    without --allow-plugin), and no 'passes without the mutant: None' is shown."""
    summary = json.loads((out_dir / "summary.json").read_text())
    summary["mutant"] = None
    for e in summary["signatures"]:
        e["passes_without_mutant"] = None
    (out_dir / "summary.json").write_text(json.dumps(summary))
    case = out_dir / "cases" / "SEM-1.run.relu-save.json"
    doc = json.loads(case.read_text())
    doc.update(pipeline="my_passes:PIPELINE", mutant=None)
    case.write_text(json.dumps(doc))
    code, _, _ = refc(capsys, "report", out_dir)
    html = (out_dir / "report.html").read_text()
    replays = re.findall(r'<code class="replay">([^<]*)</code>', html)
    assert code == 0 and replays == [f"refc replay {out_dir}/cases/SCH-2.proof.save.json",
                                     f"refc replay {out_dir}/cases/SEM-1.run.relu-save.json --allow-plugin my_passes"], replays
    assert "passes without the mutant" not in html and "None" not in re.sub(r"<[^>]*>", "", html)


def test_numbers_too_large_for_a_float_and_a_case_name_with_a_nul_are_a_summarys_data_not_a_crash(capsys, out_dir):
    # each was exit 4: OverflowError converting to float, ValueError on an embedded null byte
    doc = json.loads((out_dir / "summary.json").read_text())
    huge = 10**400
    doc.update(seconds=huge, cases_per_second=huge, progress=[{"seconds": 0, "cases": 0, "schedules": 0}, {"seconds": 1, "cases": huge, "schedules": 2}])
    doc["signatures"][0]["seconds_to_find"] = huge
    doc["signatures"].append({**doc["signatures"][1], "case": "cases/\u0000x.json"})
    (out_dir / "summary.json").write_text(json.dumps(doc))
    code, out, err = refc(capsys, "report", out_dir)
    assert (code, err) == (0, "") and "3 findings" in out


def test_pictures_stop_when_the_pages_layout_time_is_spent_and_the_cases_still_show(capsys, out_dir, monkeypatch):
    from refc.cli import report

    monkeypatch.setattr(report, "PICTURE_SECONDS", 0.0)
    assert refc(capsys, "report", out_dir)[0] == 0
    html = (out_dir / "report.html").read_text()
    assert html.count("<svg") == 1 and html.count("layout time are spent") == 2  # the chart only
    assert html.count('<code class="replay">') == 2 and "sched-drop-save-war" in html and "&quot;expect&quot;" in html


def test_a_layout_dot_cannot_finish_is_noted_beside_its_case(capsys, out_dir, monkeypatch):
    from refc.cli import report
    from refcompiler.errors import UsageError

    def stuck(dot_text, form, seconds):
        raise UsageError(f"Graphviz's dot took longer than {seconds:.0f} s to lay out the picture; try --format dot")

    monkeypatch.setattr(report, "render", stuck)
    assert refc(capsys, "report", out_dir)[0] == 0
    html = (out_dir / "report.html").read_text()
    assert html.count("no picture: Graphviz&#x27;s dot took longer than 60 s") + html.count("no picture: Graphviz's dot took longer than 60 s") == 2
    assert html.count('<code class="replay">') == 2 and "&quot;expect&quot;" in html


def test_case_files_are_read_within_the_pages_budget_and_a_large_one_is_not_copied(capsys, out_dir, monkeypatch):
    """A campaign directory is data: 200 case files of 8 MiB were minutes of
    parsing and a 1.6 GB page."""
    from refc.cli import report

    cases = sorted((out_dir / "cases").glob("*.json"))
    first = cases[0].stat().st_size
    monkeypatch.setattr(report, "MAX_SHOWN_CASE_BYTES", 10)
    monkeypatch.setattr(report, "MAX_CASE_BYTES", first + 1)  # the first case only
    assert refc(capsys, "report", out_dir)[0] == 0
    html = (out_dir / "report.html").read_text()
    assert html.count("is not copied into the page") == 1 and "&quot;expect&quot;" not in html
    assert html.count("of case files are spent") == 1 and html.count('<code class="replay">') == 2


def test_the_replay_command_keeps_the_plugin_folders_the_campaign_printed():
    # the page built the command again from the case and dropped the PYTHONPATH= the
    # campaign's own command carries: pasted elsewhere it said "needs plug-in"
    from refc.cli.report import _with_path

    command = "refc replay o/cases/x.json --allow-plugin mine"
    entry = {"replay": "PYTHONPATH='/tmp/my plugins' refc replay /elsewhere/cases/x.json --allow-plugin mine"}
    assert _with_path(entry, command) == f"PYTHONPATH='/tmp/my plugins' {command}"
    for replay in (None, 3, "refc replay x.json", "PYTHONPATH='unclosed refc replay"):
        assert _with_path({"replay": replay}, command) == command


def test_the_page_reads_the_summary_format_campaigns_write():
    # refc report keeps its own copy (it imports no campaign code): the two must move together
    from fuzz.campaign.summary import SUMMARY_FORMAT
    from refc.cli.report import SUMMARY_FORMAT as READ

    assert READ == SUMMARY_FORMAT
