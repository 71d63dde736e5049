"""``refc bench --fuzz``: throughput with one worker and with all, side by side."""

from __future__ import annotations

import json

import pytest

from fuzz.campaign import default_workers
from refc.cli import main


def test_bench_fuzz_measures_one_worker_beside_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--fuzz", "--fuzz-budget", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"fuzz"}
    rows = data["fuzz"]["campaigns"]
    assert [r["workers"] for r in rows] == sorted({1, default_workers()})
    for r in rows:
        assert r["cases"] > 0 and r["schedules"] >= r["cases"] and r["failures"] == 0
        assert r["cases_per_second"] > 0
    assert rows[0]["speedup"] == 1.0
