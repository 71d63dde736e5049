"""Campaigns against a user's code (tests/data/plugins/): a randomised
scheduler wrong on one pick in fifty and a buffer-sharing pass that forgets
the instruction's other operands are found, their cases record the plug-in
and replay exactly, and the fixed twins pass those cases. A plug-in that
calls sys.exit is a finding naming it, not the end of the campaign."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from refcompiler.graph_json import load_graph

from fuzz.campaign import CampaignConfig, run_campaign
from fuzz.case import case_from_doc
from fuzz.corpus import replay

PLUGINS = Path(__file__).resolve().parents[2] / "data" / "plugins"
QUICK = {"budget": None, "out": None, "stop_on_failure": True, "shrink_calls": 20, "reduce_attempts": 30}


@pytest.fixture(autouse=True)
def plugins_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))


def _only_case(summary):
    (failure,) = summary.found.values()
    assert failure.reproduces and failure.not_reproduced is None
    return failure, case_from_doc(failure.case_doc)


def test_a_scheduler_wrong_on_one_pick_in_fifty_is_caught_and_replays():
    config = CampaignConfig(max_cases=15, chunk_cases=15, seed=0, max_nodes=6, schedulers=("flaky_scheduler:schedule",), **QUICK)
    failure, case = _only_case(run_campaign(config))
    # blamed by its name, as a user's pass is: whose order it was, not refc's scheduler
    assert failure.signature.invariant == "SCH-1" and failure.signature.blame == "flaky_scheduler:schedule"
    assert case.scheduler == "flaky_scheduler:schedule" and case.scheduler_seed is not None and case.schedule is None
    # the order it produced is kept as data, for `refc show` to draw its broken edge: names of
    # the graph, or of the graph the compiler schedules (the private copies that break a save cycle)
    from refcompiler.driver import scheduled_graph

    assert case.scheduler_order is not None
    assert set(case.scheduler_order) <= set(case.graph.node_by_name) | set(scheduled_graph(case.graph).node_by_name)
    assert dict(case.versions).keys() == {"refc", "numpy", "hypothesis", "z3-solver"}
    assert case.found_by == "refc fuzz --seed 0 --scheduler flaky_scheduler:schedule --max-nodes 6"
    assert replay(case) is not None
    assert replay(replace(case, scheduler="flaky_scheduler:fixed")) is None


def test_a_scheduler_that_keeps_state_between_calls_is_not_said_to_reproduce():
    # in the campaign's process its stale order fails on any graph (shrunk to none);
    # `refc replay` runs the case in a fresh process, where it passes, and the campaign says so
    config = CampaignConfig(max_cases=5, chunk_cases=5, seed=0, schedulers=("memo_scheduler:schedule",), **QUICK)
    (failure,) = run_campaign(config).found.values()
    assert str(failure.signature) == "SCH-1 at compile by memo_scheduler:schedule"
    assert not failure.reproduces
    assert failure.not_reproduced.startswith("replaying the stored case in a fresh process (as refc replay does) finds nothing: ")
    import memo_scheduler

    memo_scheduler._BY_NAME.clear()  # as a fresh process has it: the stored case passes
    assert replay(case_from_doc(failure.case_doc)) is None


def test_a_sharing_pass_that_forgets_other_operands_is_caught_and_replays():
    # the hazard (sgd_momentum reading, as its gradient, the buffer its result takes over)
    # is drawn about once in 200 generated cases, so the campaign runs over one graph that
    # has it (refc fuzz --graph): independent of what each seed generates
    hazard = load_graph(PLUGINS / "forgetful_hazard.json")
    config = CampaignConfig(max_cases=10, chunk_cases=10, seed=0, pipeline="forgetful_sharing:forgetful", graph=hazard,
                            graph_file="forgetful_hazard.json", **QUICK)
    failure, case = _only_case(run_campaign(config))
    assert failure.signature.invariant == "IR-6" and case.pipeline == "forgetful_sharing:forgetful"
    assert case.found_by == "refc fuzz --seed 0 --pipeline forgetful_sharing:forgetful --graph forgetful_hazard.json"
    assert replay(case) is not None
    assert replay(replace(case, pipeline="forgetful_sharing:fixed")) is None


def test_a_graph_campaign_gives_a_users_pass_the_seeds_of_each_case():
    # sgd_momentum's seeds add up to 50: the pass is wrong only for the fresh seeds some cases draw,
    # which it must see in the programs it is given (not the graph's own, with the fresh values as inputs)
    graph = load_graph(Path(__file__).resolve().parents[3] / "examples" / "sgd_momentum.json")
    config = CampaignConfig(max_cases=30, chunk_cases=30, seed=4, pipeline="seed_keyed_pass:on_some_seeds", graph=graph,
                            graph_file="sgd_momentum.json", symbolic=False, **QUICK)
    failure, case = _only_case(run_campaign(config))
    assert failure.signature.invariant == "SEM-1" and case.pipeline == "seed_keyed_pass:on_some_seeds"
    assert sum(s.init.seed for s in case.graph.storage if s.init is not None and s.init.seed is not None) % 3 == 0


def test_a_plugin_calling_sys_exit_is_a_finding_naming_it():
    config = CampaignConfig(max_cases=3, chunk_cases=3, seed=0, schedulers=("exiting_scheduler:schedule",), **QUICK)
    summary = run_campaign(config)
    assert summary.failed and summary.stopped_by == "failure"
    (failure,) = summary.found.values()
    assert "exiting_scheduler" in failure.explanation and "sys.exit(3)" in failure.explanation


def test_a_scheduler_that_hangs_is_a_timeout_and_no_step_of_shrinking_waits_for_it():
    # each shrink attempt, reducer step and replay of the stored case runs within
    # case_seconds too: before, the reducer's calls waited the plug-in's 60 s each
    import time

    config = CampaignConfig(max_cases=1, chunk_cases=1, seed=0, schedulers=("sleepy_scheduler:schedule",), case_seconds=0.2,
                            **{**QUICK, "shrink_calls": 3, "reduce_attempts": 4})
    start = time.monotonic()
    summary = run_campaign(config)
    assert time.monotonic() - start < 30
    (failure,) = summary.found.values()
    # blamed on the scheduler, with the line of its code where the limit struck
    assert failure.explanation.startswith("timeout in the scheduler sleepy_scheduler:schedule (at ")
    assert "sleepy_scheduler.py:7 in schedule): the case ran past its time limit of 0.2 s" in failure.explanation
    assert str(failure.signature) == "error at compile by sleepy_scheduler:schedule"
    assert failure.reproduces  # its replay timed out the same way, within the limit


def test_a_scheduler_that_hangs_longer_than_the_budget_leaves_the_campaign_inconclusive_in_time():
    # --case-seconds above the budget: no case ends before the campaign's time is up.
    # The chunk stops the case a second before it would be abandoned and says where it was.
    import time

    config = CampaignConfig(budget=0.5, seed=0, schedulers=("sleepy_scheduler:schedule",), case_seconds=60.0, out=None, shrink_grace=0.0)
    start = time.monotonic()
    summary = run_campaign(config)
    assert time.monotonic() - start < 0.5 + 5.0 + 2
    assert not summary.failed and summary.cases == summary.invalid_cases
    (lost,) = [lost for lost in summary.lost_chunks if lost["kind"] == "cut"]
    assert "still running in the scheduler sleepy_scheduler:schedule (at " in lost["reason"]
    assert "when the campaign's time was up" in lost["reason"]
    assert summary.inconclusive
    from fuzz.campaign.reports import junit_xml, markdown_summary

    assert '<error message="inconclusive: nothing found, but no valid case was checked (1 lost chunk)" type="inconclusive">' in junit_xml(summary)
    assert markdown_summary(summary, Path("out")).startswith("### refc fuzz: inconclusive: nothing found, but no valid case was checked")


def test_a_timeout_outside_a_users_code_blames_nobody():
    from fuzz.campaign.failure import timeout_finding
    from fuzz.time_limit import CaseTimeout

    found = timeout_finding(CaseTimeout(2.0))
    assert str(found.signature) == "error at execute []" and found.explanation.startswith("timeout: ")


def test_the_replay_command_carries_the_folder_a_plugin_was_found_in(monkeypatch, tmp_path):
    from fuzz.campaign.summary import replay_command

    import flaky_scheduler  # noqa: F401  # imported, as a campaign imports it

    config = CampaignConfig(max_cases=1, schedulers=("flaky_scheduler:schedule",), **QUICK)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(PLUGINS))  # found on PYTHONPATH: a replay from elsewhere needs it
    assert replay_command(config, "c.json") == f"PYTHONPATH={PLUGINS} refc replay c.json --allow-plugin flaky_scheduler"
    monkeypatch.delenv("PYTHONPATH")  # found elsewhere (installed, a path set in-process): nothing to add
    assert replay_command(config, "c.json") == "refc replay c.json --allow-plugin flaky_scheduler"
    monkeypatch.chdir(PLUGINS)  # nor in the current folder, where the command is run again
    assert replay_command(config, "c.json") == "refc replay c.json --allow-plugin flaky_scheduler"
    # a built-in scheduler names no module
    assert replay_command(replace(config, schedulers=("topo",)), "c.json") == "refc replay c.json"
