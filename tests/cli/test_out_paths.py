"""``--out``: checked before any work; ``-`` and ``/dev/null``; a campaign's lock;
``--workers`` capped at the cores."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from refcompiler.files import locked_dir

from refc.cli.common import cores
from tests.cli.inprocess import refc

ROOT = Path(__file__).resolve().parents[2]
SGD = ROOT / "examples" / "sgd_momentum.json"


def test_run_out_dash_writes_the_npz_to_stdout():
    done = subprocess.run([sys.executable, "-m", "refc", "run", str(SGD), "--out", "-"], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    with np.load(io.BytesIO(done.stdout)) as data:
        assert sorted(data.files) == ["loss", "v", "w", "x"]


def test_run_out_dev_null(capsys):
    code, out, _ = refc(capsys, "run", SGD, "--out", "/dev/null")
    assert code == 0 and "to /dev/null" in out


def test_run_out_a_dangling_link_is_refused_before_running(capsys, tmp_path, monkeypatch):
    link = tmp_path / "o.npz"
    link.symlink_to(tmp_path / "nowhere" / "o.npz")
    monkeypatch.setattr("refc.cli.run.load_with_settings", lambda args: (_ for _ in ()).throw(AssertionError("ran")))
    code, _, err = refc(capsys, "run", SGD, "--out", link)
    assert code == 2 and "is a dangling symbolic link" in err and not (tmp_path / "nowhere").exists()


def test_fuzz_out_that_cannot_be_written_is_refused(capsys, tmp_path):
    (tmp_path / "file").write_text("")
    for out in (tmp_path / "file", tmp_path / "file" / "sub", "/proc/sys/refc-out", "/dev/null"):
        code, _, err = refc(capsys, "fuzz", "--max-cases", "1", "--workers", "1", "--out", out)
        assert code == 2 and err.startswith(f"refc fuzz: --out {out}: cannot write there")


def test_a_second_campaign_into_one_directory_is_refused(capsys, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    with locked_dir(out):  # as a running campaign holds it
        code, _, err = refc(capsys, "fuzz", "--max-cases", "1", "--workers", "1", "--out", out)
    assert code == 2 and "in use by another refc process" in err
    assert not (out / "summary.json").exists()


def test_a_planted_link_in_a_campaign_out_directory_is_not_followed(capsys, tmp_path):
    out, victim = tmp_path / "out", tmp_path / "victim"
    out.mkdir()
    victim.write_text("precious")
    (out / "summary.json").symlink_to(victim)
    code, _, err = refc(capsys, "fuzz", "--max-cases", "1", "--workers", "1", "--out", out)
    # an earlier run's outputs (the planted link among them) are moved aside, never written through
    assert code == 0 and "moved the earlier campaign's outputs" in err
    assert victim.read_text() == "precious"
    assert (out / "summary.json").is_file() and not (out / "summary.json").is_symlink()
    moved = [p for p in out.glob("earlier-*/summary.json")]
    assert len(moved) == 1 and moved[0].is_symlink()


def test_workers_are_capped_at_the_cores_unless_forced(capsys, tmp_path):
    code, _, err = refc(capsys, "fuzz", "--max-cases", "1", "--workers", cores() + 1, "--out", tmp_path / "o")
    assert code == 2 and f"only {cores()} cores are available (--force-workers" in err
    code, _, err = refc(capsys, "fuzz", "--max-cases", "1", "--workers", cores() + 1, "--force-workers", "--out", tmp_path / "o")
    assert code == 0, err


@pytest.mark.parametrize("argv", [
    ["show", "{g}", "--format", "dot", "-o", "{o}"],
    ["show", "{g}", "-o", "{o}"],
    ["compile", "{g}", "--format", "dot", "-o", "{o}"],
    ["prove", "{g}", "--format", "dot", "-o", "{o}"],
    ["run", "{g}", "--out", "{o}"],
    ["validate", "{g}", "--out", "{o}"],
])
@pytest.mark.parametrize("link", [False, True])
def test_an_output_that_is_the_graph_read_is_refused_and_the_graph_kept(capsys, tmp_path, argv, link):
    graph = tmp_path / "g.json"
    graph.write_text(SGD.read_text())
    out = graph
    if link:
        out = tmp_path / "same.dot"
        out.symlink_to(graph)
    code, _, err = refc(capsys, *(a.format(g=graph, o=out) for a in argv))
    assert code == 2 and f"{out}: the output would overwrite the input {graph}" in err and len(err.strip().splitlines()) == 1
    assert graph.read_text() == SGD.read_text()


def test_run_may_write_its_values_over_the_inputs_it_read(capsys, tmp_path):
    """The values at exit are the next run's inputs: the archive is read whole before it is replaced."""
    state = tmp_path / "state.npz"
    assert refc(capsys, "run", SGD, "--out", state)[0] == 0
    first = dict(np.load(state))
    assert refc(capsys, "run", SGD, "--inputs", state, "--out", state)[0] == 0
    assert not all(np.array_equal(first[k], v) for k, v in np.load(state).items())


def test_report_o_never_overwrites_the_summary_or_a_case_it_reads(capsys, tmp_path):
    camp = tmp_path / "camp"
    assert refc(capsys, "fuzz", "--max-cases", "20", "--workers", "1", "--mutant", "share-any-input", "--out", camp)[0] == 1
    summary = (camp / "summary.json").read_text()
    case = camp / json.loads(summary)["signatures"][0]["case"]
    text = case.read_text()
    for target in (camp / "summary.json", case):
        code, _, err = refc(capsys, "report", camp, "-o", target)
        assert code == 2 and "the output would overwrite the input" in err
    assert (camp / "summary.json").read_text() == summary and case.read_text() == text
    assert refc(capsys, "report", camp, "-o", tmp_path / "page.html")[0] == 0
