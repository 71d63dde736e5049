"""The campaign runner: determinism, shrunk and replayable cases, outputs,
workers, budgets."""

from __future__ import annotations

import json
import os
import signal
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

import pytest
from hypothesis import given, settings

from refcompiler.errors import UsageError

from fuzz.campaign import CampaignConfig, Summary, chunk_seed, fuzz_cases, run_campaign, score_mutant, write_outputs
from fuzz.case import ExpectKind
from fuzz.corpus import load_case, replay

TIMINGS = {"seconds", "cases_per_second", "schedules_per_second", "seconds_by_stage", "progress"}


def _untimed(summary: Summary) -> dict:
    doc = summary.to_doc()
    for key in TIMINGS:
        doc.pop(key)
    for entry in doc["signatures"]:
        entry.pop("seconds_to_find")
    return doc


def _cases(summary: Summary) -> dict:
    return {str(sig): f.case_doc for sig, f in summary.found.items()}


def test_a_count_bounded_campaign_is_deterministic():
    config = CampaignConfig(budget=None, max_cases=40, seed=5, out=None)
    first, second = run_campaign(config), run_campaign(config)
    assert first.cases > 20 and first.schedules > first.cases
    assert _untimed(first) == _untimed(second)
    assert first.stopped_by == "cases" and not first.failed


def test_the_summary_keeps_the_campaigns_progress_over_time_for_the_reports_chart():
    # the report's throughput chart drew flat averages: no campaign wrote the series it reads
    from refcompiler.pictures.charts import progress_points, throughput_svg

    summary = run_campaign(CampaignConfig(budget=None, max_cases=60, chunk_cases=20, seed=5, out=None))
    doc = summary.to_doc()
    points = progress_points(doc)
    assert len(points) == 1 + summary.chunks >= 4 and points[0] == (0.0, 0.0, 0.0)
    assert points[-1][1:] == (summary.cases, summary.schedules)
    assert all(a[1] <= b[1] and a[2] <= b[2] for a, b in zip(points, points[1:]))  # cumulative
    chart = throughput_svg(doc, [])
    assert "progress series" in chart and "averages over the campaign" not in chart


def test_a_mutant_campaign_is_deterministic_and_its_case_replays(tmp_path):
    config = CampaignConfig(budget=None, max_cases=60, seed=2, mutant="dse-drop-state-write", out=tmp_path, stop_on_failure=True)
    summary, again = run_campaign(config), run_campaign(config)
    assert summary.failed and summary.found
    assert _untimed(summary) == _untimed(again)
    assert _cases(summary) == _cases(again)

    write_outputs(summary, tmp_path)
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert doc["failures"] >= 1 and doc["distinct_failures"] == len(summary.found)
    for entry in doc["signatures"]:
        case = load_case(tmp_path / entry["case"])
        assert case.mutant == "dse-drop-state-write" and case.expect.kind is ExpectKind.PASS
        assert len(case.graph.nodes) <= 5 and entry["nodes"] == len(case.graph.nodes)
        # the replay command as the console prints it, runnable where the campaign ran (it was relative to out/)
        assert entry["replay"] == f"refc replay {tmp_path / entry['case']} --mutant dse-drop-state-write"
        # it records what was found on it, for a reader (refc show draws its nodes red)
        assert case.finding is not None and case.finding.signature == entry["text"] and case.finding.explanation == entry["explanation"]
        assert case.finding.nodes and set(case.finding.nodes) <= set(case.graph.node_by_name)
        # the shrunk case kills the mutant and passes on the correct compiler
        assert replay(case, mutant="dse-drop-state-write") is not None
        assert replay(case) is None
        assert entry["reproduces"] and entry["passes_without_mutant"]

    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == str(len(summary.found))
    assert len(suite.findall("testcase/failure")) == len(summary.found)


def test_a_verifier_mutant_is_killed_by_an_invalid_graph(tmp_path):
    # only invalid cases: one in ten is the edit this mutant accepts (OWN-4, two saves)
    config = CampaignConfig(budget=None, max_cases=100, seed=1, mutant="verify-allow-two-saves", stop_on_failure=True, invalid_share=1.0)
    summary = run_campaign(config)
    assert summary.stopped_by == "failure"
    (failure,) = summary.found.values()
    assert failure.signature.invariant == "OWN-4" and failure.signature.stage == "verify"
    assert failure.case_doc["expect"] == {"reject": "OWN-4"}
    assert failure.nodes <= 3


def test_outputs_of_a_clean_campaign(tmp_path):
    summary = run_campaign(CampaignConfig(budget=None, max_cases=10, seed=0, out=tmp_path))
    write_outputs(summary, tmp_path)
    doc = json.loads((tmp_path / "summary.json").read_text())
    for key in ("cases", "schedules", "failures", "seconds", "cases_per_second", "schedules_per_second", "signatures"):
        assert key in doc
    assert doc["signatures"] == [] and doc["failures"] == 0
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "0" and len(suite.findall("testcase")) == 1
    assert not (tmp_path / "cases").exists()


def test_workers_in_a_process_pool_and_a_pluggable_executor():
    summary = run_campaign(CampaignConfig(budget=None, max_cases=40, seed=3, workers=2, chunk_cases=10))
    assert summary.cases > 20 and summary.chunks == 4
    with ProcessPoolExecutor(max_workers=1) as pool:
        summary = run_campaign(CampaignConfig(budget=None, max_cases=10, seed=3, workers=1), executor=pool)
    assert summary.cases > 0 and summary.chunks == 1


def test_a_time_budget_stops_the_campaign():
    start = time.time()
    summary = run_campaign(CampaignConfig(budget=1.5, seed=4, chunk_cases=5))
    assert summary.stopped_by == "budget" and summary.cases > 0
    assert time.time() - start < 10


def test_config_is_validated():
    with pytest.raises(UsageError):
        CampaignConfig(budget=None, max_cases=None)
    with pytest.raises(UsageError):
        CampaignConfig(budget=0)
    with pytest.raises(UsageError):
        CampaignConfig(max_cases=0)
    with pytest.raises(UsageError):
        CampaignConfig(workers=0)
    with pytest.raises(UsageError):
        CampaignConfig(invalid_share=2)
    # sizes are whole numbers (the generator draws from them): not a float or a bool
    for field, value in (("max_dim", 8.0), ("max_nodes", 5.5), ("workers", True), ("max_cases", 3.0), ("chunk_cases", "50")):
        with pytest.raises(UsageError, match=f"{field} must be a whole number, got {value!r}"):
            CampaignConfig(**{"max_cases": 10, field: value})
    assert CampaignConfig(max_cases=10, max_dim=8, max_nodes=5).max_dim == 8


def test_chunk_seeds_depend_on_seed_and_index_only():
    assert chunk_seed(1, 0) == chunk_seed(1, 0)
    assert len({chunk_seed(s, i) for s in range(5) for i in range(5)}) == 25


@settings(max_examples=10)
@given(fuzz_cases(CampaignConfig(budget=None, max_cases=1, invalid_share=1.0)))
def test_invalid_share_one_gives_only_invalid_cases(case):
    assert case[1].kind is ExpectKind.REJECT


@settings(max_examples=10)
@given(fuzz_cases(CampaignConfig(budget=None, max_cases=1, invalid_share=0.0)))
def test_invalid_share_zero_gives_only_valid_cases(case):
    assert case[1].kind is ExpectKind.PASS


def test_scoring_a_mutant_reports_the_time_to_kill_and_the_case():
    kill = score_mutant("dce-drop-stateful", budget=30, seed=1)
    assert kill.killed and kill.seconds is not None and 0 <= kill.seconds < 30
    assert kill.failure is not None and kill.failure.nodes <= 3 and kill.failure.passes_without_mutant


def test_the_budget_is_a_bound_with_workers():
    from fuzz.campaign.runner import HARD_GRACE

    start = time.time()
    config = CampaignConfig(budget=3, seed=0, workers=2, mutant="dse-drop-state-write", shrink_grace=1.0)
    summary = run_campaign(config)
    took = time.time() - start
    assert summary.stopped_by == "budget" and summary.cases > 0
    assert took < config.budget + config.shrink_grace + HARD_GRACE + 2  # + the workers' start


def test_only_the_first_signal_interrupts_and_held_defers_it_to_the_block_end():
    from fuzz.campaign.runner import _Signals

    reached = False
    with _Signals() as signals:
        with pytest.raises(KeyboardInterrupt):
            with signals.held():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
                reached = True  # the block ran to its end before the interrupt
        assert reached and signals.received == "SIGINT"
        os.kill(os.getpid(), signal.SIGTERM)  # the second of a double Ctrl-C: counted, not raised
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        assert signals.count == 3 and signals.received == "SIGINT"


@pytest.mark.parametrize("cut", ["shrink", "reduce"])
def test_an_interrupt_while_a_failure_is_shrunk_keeps_the_failure_and_the_counts(tmp_path, monkeypatch, cut):
    """One worker: a signal while the chunk shrinks (Hypothesis) or reduces its
    first failure ends the campaign, and the failure is stored as found so
    far, replaying; the chunk's cases count."""
    import fuzz.campaign.chunk as chunk
    import fuzz.campaign.failure as failure

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    if cut == "shrink":
        monkeypatch.setattr(chunk._ChunkRun, "shrink", interrupted)
    else:
        real = failure.reduce_graph

        def reduce_then_interrupt(graph, still_fails, *, stop, **kwargs):
            if stop():  # the salvage after the signal: reduce nothing
                return real(graph, still_fails, stop=stop, **kwargs)
            raise KeyboardInterrupt

        monkeypatch.setattr(failure, "reduce_graph", reduce_then_interrupt)
    config = CampaignConfig(budget=None, max_cases=60, seed=2, mutant="dse-drop-state-write", out=tmp_path)
    summary = run_campaign(config)
    assert summary.interrupted == "SIGINT" and summary.stopped_by == "interrupted"
    assert summary.cases >= 1 and summary.failures == 1 and len(summary.found) == 1
    (failure_found,) = summary.found.values()
    assert failure_found.reproduces and failure_found.passes_without_mutant
    write_outputs(summary, tmp_path)
    entry = json.loads((tmp_path / "summary.json").read_text())["signatures"][0]
    case = load_case(tmp_path / entry["case"])
    assert replay(case, mutant="dse-drop-state-write") is not None and replay(case) is None


def test_an_interrupt_keeps_the_failure_a_pool_worker_was_shrinking(tmp_path, monkeypatch):
    """Two workers: a signal while a worker shrinks its chunk's failure (here a
    shrink that would take a minute, and sends the campaign SIGINT as it
    starts) winds the worker up; the failure comes back, stored as found so
    far, and replays."""
    import fuzz.campaign.chunk as chunk

    def slow_shrink(self, choices):
        os.kill(os.getppid(), signal.SIGINT)
        deadline = time.monotonic() + 60
        while not self.out_of_time() and time.monotonic() < deadline:  # as each shrink attempt asks
            time.sleep(0.01)

    monkeypatch.setattr(chunk._ChunkRun, "shrink", slow_shrink)  # the forked workers inherit it
    config = CampaignConfig(budget=None, max_cases=200, seed=2, workers=2, mutant="dse-drop-state-write", out=tmp_path)
    started = time.monotonic()
    summary = run_campaign(config)
    assert time.monotonic() - started < 30
    assert summary.interrupted == "SIGINT" and summary.failures >= 1 and summary.found
    assert all(f.reproduces for f in summary.found.values())


def test_a_count_bounded_campaign_checks_every_case_past_a_failure():
    """A chunk ends at its first new failure; its cases left unchecked are
    checked by a continuation of it, which counts the same bug again without
    shrinking it: --max-cases N checks N cases (it checked 1 of 30 before),
    and the summary is the same with any number of workers."""
    config = CampaignConfig(budget=None, max_cases=30, chunk_cases=30, seed=2, mutant="dse-drop-state-write", out=None)
    one, two = run_campaign(config), run_campaign(replace(config, workers=2))
    assert one.cases == 30 and one.found and one.failures > len(one.found)
    assert {k: v for k, v in _untimed(one).items() if k != "workers"} == {k: v for k, v in _untimed(two).items() if k != "workers"}
