"""``refc bench --fuzz``: throughput with one worker, two and all, side by side."""

from __future__ import annotations

import argparse
import json

import pytest

import fuzz.campaign
from fuzz.campaign import default_workers
from refc.cli import main
from refc.cli import bench_fuzz
from refc.cli.bench_fuzz import render as bench_render_fuzz


def test_bench_fuzz_measures_one_worker_beside_two(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--fuzz", "--fuzz-budget", "3", "--fuzz-rounds", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"fuzz"} and data["fuzz"]["rounds"] == 2
    rows = data["fuzz"]["campaigns"]
    assert [r["workers"] for r in rows] == sorted({1, 2, default_workers()})
    for r in rows:
        assert r["cases"] > 0 and r["schedules"] >= r["cases"] and r["failures"] == 0
        assert r["cases_per_second"] > 0 and r["schedules_per_second"] > 0
        assert len(r["rounds"]) == 2 and {k: r[k] for k in r["rounds"][0]} in r["rounds"]  # the row is one of its rounds
        assert r["cpu_seconds"] > 0 and r["schedules_per_cpu_second"] == pytest.approx(r["schedules"] / r["cpu_seconds"], rel=0.01)
    # a ratio is the median of the rounds' own ratios to the one worker of the same round
    for i, r in enumerate(rows):
        ratios = [x["schedules_per_second"] / one["schedules_per_second"] for x, one in zip(r["rounds"], rows[0]["rounds"], strict=True)]
        assert r["schedules_speedup"] == pytest.approx(sum(ratios) / 2, abs=0.01)
    assert rows[0]["speedup"] == 1.0 and rows[0]["schedules_speedup"] == 1.0
    text = bench_render_fuzz(data["fuzz"])
    assert "schedules/s" in text and "schedules ratio" in text and f"{rows[1]['schedules_speedup']:.2f}x" in text
    assert "the median of 2 rounds" in text and "schedules/CPU s" in text and "each round:" in text
    shares = rows[0]["seconds_by_stage"]  # where the one worker's time went
    assert {"generate", "schedules", "verify", "reference", "compile", "differential", "symbolic"} <= set(shares)
    assert sum(v["share"] for v in shares.values()) == pytest.approx(1.0, abs=0.01)
    assert sum(v["seconds"] for v in shares.values()) <= rows[0]["seconds"] * 1.05  # one worker: at most its wall time
    assert "where 1 worker's time went" in text and "generate " in text and "compile and run " in text


def test_bench_fuzz_row_is_the_median_round(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three rounds with made-up rates: each row is its median round, and its ratio the
    median of the per-round ratios (not the ratio of the medians)."""
    rates = iter([100.0, 150.0, 50.0, 100.0, 200.0, 360.0])  # rounds of (1 worker, 2 workers)

    def campaign(args: argparse.Namespace, workers: int) -> dict:
        sps = next(rates)
        return {"workers": workers, "cases": 1, "schedules": int(sps), "failures": 0, "seconds": 1.0, "cpu_seconds": 1.0,
                "cases_per_second": sps, "schedules_per_second": sps, "schedules_per_cpu_second": sps, "seconds_by_stage": {}}

    monkeypatch.setattr(bench_fuzz, "_campaign", campaign)
    monkeypatch.setattr(fuzz.campaign, "default_workers", lambda: 2)
    data = bench_fuzz.measure(argparse.Namespace(fuzz_budget=1.0, fuzz_seed=0, fuzz_rounds=3))
    one, two = data["campaigns"]
    assert one["schedules_per_second"] == 100.0 and two["schedules_per_second"] == 150.0
    assert two["schedules_speedup"] == 1.8  # ratios 1.5, 2.0, 1.8: the median; the ratio of the medians would be 1.5
    assert [x["schedules_per_second"] for x in two["rounds"]] == [150.0, 100.0, 360.0]


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


def test_bench_without_a_section_flag_runs_every_section_and_with_flags_only_those(monkeypatch, capsys) -> None:
    from refc.cli import bench

    ran: list[str] = []

    def section(name: str) -> bench.Section:
        def measure(args: argparse.Namespace) -> dict[str, object]:
            ran.append(name)
            return {"name": name}

        return bench.Section(name, f"the {name} section", lambda p: None, measure, lambda r: f"{r['name']} done\n")

    monkeypatch.setattr(bench, "SECTIONS", (section("alpha"), section("beta"), section("gamma")))
    assert main(["bench"]) == 0
    assert ran == ["alpha", "beta", "gamma"] and capsys.readouterr().out == "alpha done\nbeta done\ngamma done\n"
    ran.clear()
    assert main(["bench", "--gamma", "--alpha", "--json"]) == 0
    assert ran == ["alpha", "gamma"] and json.loads(capsys.readouterr().out) == {"alpha": {"name": "alpha"}, "gamma": {"name": "gamma"}}


def test_bench_compile_times_loading_and_both_pipelines_with_their_growth(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "--compile", "--compile-sizes", "40,80", "--compile-repeat", "1"]
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["compile"]
    assert [r["nodes"] for r in data["graphs"]] == [40, 80]
    for r in data["graphs"]:
        assert r["load_seconds"] > 0 and r["reference_seconds"] > 0
        assert all(r[p]["seconds"] > 0 and r[p]["over_reference"] > 0 for p in ("O0", "O2"))
    assert set(data["growth_exponent"]) == {"load", "O0", "O2", "reference"}
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "load s" in out and "growth exponent (log-log least squares, 40 to 80 nodes): load " in out
