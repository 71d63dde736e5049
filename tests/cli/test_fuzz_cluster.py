"""``refc fuzz --cluster``: a local cluster of two worker processes gives the
summary of a run in one process; SIGTERM ends it with a complete summary; bad
usage (a malformed spec, --workers beside it, an address with no scheduler,
no dask installed) is exit 2 with one line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

import fuzz.campaign.cluster as cluster
from tests.cli.inprocess import refc

TIMINGS = {"seconds", "cases_per_second", "schedules_per_second", "workers", "seconds_by_stage", "progress", "command"}  # and how it was run


def _fuzz(out, *extra: str) -> dict:
    proc = subprocess.run(["refc", "fuzz", "--max-cases", "20", "--seed", "4", "--out", str(out), *extra],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "summary.json").read_text())
    return {k: v for k, v in doc.items() if k not in TIMINGS}


def test_a_local_cluster_gives_the_summary_of_one_process(tmp_path):
    assert _fuzz(tmp_path / "cluster", "--cluster", "local:2") == _fuzz(tmp_path / "here", "--workers", "1")


def test_sigterm_cancels_the_cluster_run_and_writes_a_complete_summary(tmp_path):
    proc = subprocess.Popen(["refc", "fuzz", "--budget", "60", "--cluster", "local:2", "--out", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # the intro says the cluster is up (Dask may warn first, e.g. of a port another cluster holds)
    assert any("2 workers" in proc.stderr.readline() for _ in range(20))
    time.sleep(3)
    start = time.time()
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=30)
    assert time.time() - start < 20
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert doc["interrupted"] == "SIGTERM" and doc["complete"] and doc["stopped_by"] == "interrupted"
    assert code == (1 if doc["distinct_failures"] else 143)


@pytest.mark.parametrize("argv, message", [
    (["--cluster", "local:0"], "local:N needs a whole number"),
    (["--cluster", "local:2", "--workers", "2"], "--workers and --cluster exclude each other"),
    (["--cluster", "tcp://127.0.0.1:1"], "cannot connect to a Dask scheduler there"),
])
def test_bad_cluster_usage_is_exit_2_with_one_line(capsys, monkeypatch, tmp_path, argv, message):
    monkeypatch.setattr(cluster, "CONNECT_SECONDS", 1.0)
    code, out, err = refc(capsys, "fuzz", "--max-cases", "5", "--out", tmp_path, *argv)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "summary.json").exists()


def test_without_dask_the_error_names_the_extra(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "distributed", None)
    code, out, err = refc(capsys, "fuzz", "--max-cases", "5", "--out", tmp_path, "--cluster", "local:1")
    assert code == 2 and "pip install -e '.[dask]'" in err and len(err.strip().splitlines()) == 1
