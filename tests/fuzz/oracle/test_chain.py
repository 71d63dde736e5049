"""The chain as data: its stages in order, per-graph work done once, and a
stage added by one entry."""

from __future__ import annotations

from pathlib import Path

import fuzz.oracle.context as context
from refcompiler.graph_json import load_graph

from fuzz.case import Case, reject
from fuzz.oracle import CHAIN, Finding, GraphContext, Location, OracleStage, Stage, check_case, iter_findings
from fuzz.schedules import ScheduleChoice, ScheduleSource

ROOT = Path(__file__).resolve().parents[3]
READ_THEN_SAVE = ROOT / "examples" / "read_then_save.json"


def test_the_chain_is_one_ordered_list_of_stages():
    assert [s.name for s in CHAIN] == [Stage.VERIFY, Stage.REFERENCE, Stage.PROOF, Stage.COMPILE, Stage.DIFFERENTIAL, Stage.SYMBOLIC]
    assert [s.per_schedule for s in CHAIN] == [False, False, False, True, True, True]
    assert {"G-1", "SCH-2", "SCH-1", "MEM-1", "SEM-1"} <= {i for s in CHAIN for i in s.invariants}


def test_the_reference_runs_once_per_graph_however_many_schedules(monkeypatch):
    calls = []
    real = context.run_reference

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(context, "run_reference", spy)
    report = check_case(Case(load_graph(READ_THEN_SAVE)), schedulers=("topo", "memory", "random"))
    assert report.finding is None and report.schedules >= 3
    assert len(calls) == 2  # after one run and after two runs


def test_a_stage_is_one_entry_in_the_list():
    seen = []

    def every_run(run) -> Finding | None:
        seen.append((run.pipeline, run.order))
        return Finding(Stage.EXECUTE, None, "extra stage", Location(nodes=("late",))) if run.pipeline == "O2" else None

    extra = OracleStage(Stage.EXECUTE, (), every_run, per_schedule=True)
    ctx = GraphContext(load_graph(READ_THEN_SAVE))
    choice = ScheduleChoice(ScheduleSource.SCHEDULER, None, "topo")
    found = list(iter_findings(ctx, [choice], ["O0", "O2"], (*CHAIN, extra)))
    assert [f.explanation for f in found] == ["extra stage"]
    # it ran after the built-in stages, which left it the order compiled
    assert [p for p, _ in seen] == ["O0", "O2"] and all(order for _, order in seen)


def test_a_case_expected_to_be_rejected_runs_only_the_stages_for_rejects():
    ran = []
    spy = OracleStage(Stage.COMPILE, (), lambda run: ran.append(run), per_schedule=True)
    ctx = GraphContext(load_graph(READ_THEN_SAVE), expect=reject("OWN-4"))
    (f,) = iter_findings(ctx, lambda: [], ["O0"], (*CHAIN, spy))
    assert f.stage is Stage.VERIFY and f.invariant == "OWN-4" and not ran and ctx.schedules == 0
