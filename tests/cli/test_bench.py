"""``refc bench --fuzz``: throughput with one worker, two and all, side by side."""

from __future__ import annotations

import json

import pytest

from fuzz.campaign import default_workers
from refc.cli import main
from refc.cli.bench import _render_fuzz as bench_render_fuzz


def test_bench_fuzz_measures_one_worker_beside_two(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--fuzz", "--fuzz-budget", "4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"fuzz"}
    rows = data["fuzz"]["campaigns"]
    assert [r["workers"] for r in rows] == sorted({1, 2, default_workers()})
    for r in rows:
        assert r["cases"] > 0 and r["schedules"] >= r["cases"] and r["failures"] == 0
        assert r["cases_per_second"] > 0 and r["schedules_per_second"] > 0
        ratio = r["schedules_per_second"] / rows[0]["schedules_per_second"]
        assert r["schedules_speedup"] == pytest.approx(ratio, abs=0.01)
    assert rows[0]["speedup"] == 1.0 and rows[0]["schedules_speedup"] == 1.0
    text = bench_render_fuzz(data["fuzz"])
    assert "schedules/s" in text and "schedules ratio" in text and f"{rows[1]['schedules_speedup']:.2f}x" in text
    shares = rows[0]["seconds_by_stage"]  # where the one worker's time went
    assert {"generate", "schedules", "verify", "reference", "compile", "differential", "symbolic"} <= set(shares)
    assert sum(v["share"] for v in shares.values()) == pytest.approx(1.0, abs=0.01)
    assert sum(v["seconds"] for v in shares.values()) <= rows[0]["seconds"] * 1.05  # one worker: at most its wall time
    assert "where 1 worker's time went" in text and "generate " in text and "compile and run " in text


def test_bench_validate_puts_the_validator_beside_concrete_execution(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "--validate", "--validate-sizes", "40x4", "--validate-max-orders", "30", "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)["validate"]
    (row,) = data["programs"]
    assert row["verdict"] == "proved" and row["instructions"] >= 20 and row["validate_seconds"] > 0 and row["concrete_seconds"] > 0
    every = data["all_schedules"]
    assert every["orders"] == 30 and not every["enumerated_all"] and every["verdict"] == "inconclusive" and 1 <= every["programs"] <= 30
    assert main(["bench", "--validate", "--validate-sizes", "40x4", "--validate-max-orders", "30"]) == 0
    assert "30 (not all) legal orders" in capsys.readouterr().out
