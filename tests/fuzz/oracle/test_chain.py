"""The chain as data: its stages in order, per-graph work done once, and a
stage added by one entry."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

import fuzz.oracle.context as context
from refcompiler.driver import scheduled_graph
from refcompiler.errors import InvariantViolation, UsageError
from refcompiler.graph_json import load_graph
from refcompiler.mutants import activate
from refcompiler.schedulers import resolve_scheduler

from fuzz.case import Case, reject
from fuzz.oracle import CHAIN, Finding, Signature, GraphContext, Location, OracleStage, Stage, check, check_case, iter_findings
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


def test_the_compiler_verifies_and_prepares_once_per_graph(monkeypatch):
    calls = []
    real = context.prepare

    def spy(graph):
        calls.append(graph)
        return real(graph)

    monkeypatch.setattr(context, "prepare", spy)
    report = check_case(Case(load_graph(READ_THEN_SAVE)), schedulers=("topo", "memory", "random"))
    assert report.finding is None and report.schedules >= 3
    assert len(calls) == 1  # not once per schedule and pipeline


def _counting(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


def test_without_a_mutant_the_schedules_come_from_the_context_s_scheduled_graph(monkeypatch):
    check, schedules = importlib.import_module("fuzz.oracle.check"), importlib.import_module("fuzz.schedules")

    graph = load_graph(READ_THEN_SAVE)
    want = schedules.case_schedules(scheduled_graph(graph), seed=3, schedulers=("topo", "memory", "random"))
    models = _counting(monkeypatch, context, "scheduled_model")
    derived = _counting(monkeypatch, check, "scheduled_model")
    given = _counting(monkeypatch, schedules, "dependency_graph")
    got = []
    real = check.case_schedules
    monkeypatch.setattr(check, "case_schedules", lambda *a, **k: got.append(real(*a, **k)) or got[-1])
    report = check_case(Case(graph), schedulers=("topo", "memory", "random"), seed=3)
    assert report.finding is None and got == [want]
    assert len(models) == 1  # the scheduled graph and its model made once, for the oracle and the schedules
    assert derived == [] and given == []


def test_under_a_mutant_the_schedules_follow_the_mutant_s_model(monkeypatch):
    check, schedules = importlib.import_module("fuzz.oracle.check"), importlib.import_module("fuzz.schedules")

    graph = load_graph(READ_THEN_SAVE)
    with activate("sched-drop-save-war"):
        want = schedules.case_schedules(scheduled_graph(graph), seed=3, schedulers=("topo",))
    assert want != schedules.case_schedules(scheduled_graph(graph), seed=3, schedulers=("topo",))
    derived = _counting(monkeypatch, check, "scheduled_model")
    got = []
    real = check.case_schedules
    monkeypatch.setattr(check, "case_schedules", lambda *a, **k: got.append(real(*a, **k)) or got[-1])
    nothing = Signature("none", "none", ())  # matches no finding: every schedule is checked
    check_case(Case(graph), mutant="sched-drop-save-war", seed=3, target=nothing)
    assert got == [want] and len(derived) == 1


def test_an_error_preparing_the_graph_is_a_finding_for_every_schedule(monkeypatch):
    calls = []

    def failing(graph):
        calls.append(graph)
        raise InvariantViolation("OWN-2", "made up for the test", names=("late",))

    monkeypatch.setattr(context, "prepare", failing)
    ctx = GraphContext(load_graph(READ_THEN_SAVE), proof=False)
    choices = [ScheduleChoice(ScheduleSource.SCHEDULER, scheduler=s) for s in ("topo", "memory")]
    found = list(iter_findings(ctx, choices, ["O0", "O2"]))
    assert [(f.stage, f.invariant, f.schedule.scheduler) for f in found] == [(Stage.COMPILE, "OWN-2", "topo"), (Stage.COMPILE, "OWN-2", "memory")]
    assert len(calls) == 1  # the error is kept and raised again, not recomputed


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


def _given(*orders: tuple[str, ...]) -> list[ScheduleChoice]:
    return [ScheduleChoice(ScheduleSource.GIVEN, o) for o in orders]


def _wrong_under(bad: tuple[str, ...], seen: list, *, fatal: bool) -> OracleStage:
    """A stage that records each (order, pipeline) and finds something, under any pipeline, for ``bad``."""

    def check(run) -> Finding | None:
        seen.append((run.given, run.pipeline))
        return Finding(Stage.EXECUTE, None, f"wrong under {run.pipeline}", Location(nodes=("late",))) if run.given == bad else None

    return OracleStage(Stage.EXECUTE, (), check, per_schedule=True, fatal=fatal)


def test_o0_is_checked_under_the_first_schedule_and_where_the_pipeline_finds_something():
    """O0 depends on the graph alone: beside the first schedule only; under a
    later one, only when the pipeline under test finds something there, and
    then first, so the findings come as if O0 had run first (a fault both
    show is O0's, and "O0 agrees" is said only when it does)."""
    graph = load_graph(READ_THEN_SAVE)
    for fatal in (True, False):
        seen: list = []
        ctx = GraphContext(graph, proof=False)
        orders = [("sum", "s", "late", "save_late"), ("late", "sum", "s", "save_late"), ("late", "save_late", "sum", "s")]
        found = list(iter_findings(ctx, _given(*orders), ["O0", "O2"], (*CHAIN, _wrong_under(orders[1], seen, fatal=fatal))))
        assert seen == [(orders[0], "O0"), (orders[0], "O2"), (orders[1], "O2"), (orders[1], "O0"), (orders[2], "O2")]
        assert [f.explanation for f in found] == ["wrong under O0"] + ([] if fatal else ["wrong under O2"])
        assert ctx.schedules == 3


def test_a_case_expected_to_be_rejected_runs_only_the_stages_for_rejects():
    ran = []
    spy = OracleStage(Stage.COMPILE, (), lambda run: ran.append(run), per_schedule=True)
    ctx = GraphContext(load_graph(READ_THEN_SAVE), expect=reject("OWN-4"))
    (f,) = iter_findings(ctx, lambda: [], ["O0"], (*CHAIN, spy))
    assert f.stage is Stage.VERIFY and f.invariant == "OWN-4" and not ran and ctx.schedules == 0


def test_an_order_already_passed_is_compiled_but_not_run_again(monkeypatch):
    import fuzz.oracle.stages.compile_run as compile_run

    runs = []
    real = compile_run.run_compiled_each
    monkeypatch.setattr(compile_run, "run_compiled_each", lambda *a, **k: runs.append(1) or real(*a, **k))
    ctx = GraphContext(load_graph(READ_THEN_SAVE))
    topo = ScheduleChoice(ScheduleSource.SCHEDULER, None, "topo")
    assert list(iter_findings(ctx, [topo], ["O0", "O2"])) == []
    (order,) = ctx._passed
    passed = len(ctx._passed[order])  # 1 when O2 changed nothing, else 2
    assert len(runs) == passed
    same = ScheduleChoice(ScheduleSource.GIVEN, order)  # the order the topo scheduler gave
    assert list(iter_findings(ctx, [same], ["O0", "O2"])) == []
    assert len(runs) == passed and len(ctx._passed[order]) == passed


def test_an_order_that_compiles_alike_is_checked_for_legality_but_not_run_again(monkeypatch):
    """Two orders that differ only in where the saves go compile at O2 (which
    writes each saved value straight into its placeholder) to one program up
    to the schedule: the second order is counted and checked (SCH-1), not run."""
    import fuzz.oracle.stages.compile_run as compile_run
    from refcompiler.graph_json import graph_from_doc

    def save(name, value, target):
        return {"name": name, "op": "save", "inputs": [value], "attrs": {"target": target}}

    graph = graph_from_doc({"format": "refc-graph/1", "name": "two_saves",
        "storage": [{"name": n, "kind": "placeholder", "dtype": "float32", "shape": [4], "init": {"seed": i}}
                    for i, n in enumerate(["A", "B", "out", "out2"])],
        "nodes": [{"name": "x", "op": "relu", "inputs": ["A"]}, save("sx", "x", "out"),
                  {"name": "y", "op": "neg", "inputs": ["B"]}, save("sy", "y", "out2")]})
    runs, legality = [], []
    real_run, real_legal = compile_run.run_compiled_each, compile_run._scheduled_legally
    monkeypatch.setattr(compile_run, "run_compiled_each", lambda *a, **k: runs.append(1) or real_run(*a, **k))
    monkeypatch.setattr(compile_run, "_scheduled_legally", lambda run: legality.append(run.order) or real_legal(run))
    ctx = GraphContext(graph)
    first, second = (ScheduleChoice(ScheduleSource.GIVEN, o) for o in [("x", "sx", "y", "sy"), ("x", "y", "sx", "sy")])
    assert list(iter_findings(ctx, [first, second], ["O2"])) == []
    assert ctx.schedules == 2 and len(runs) == 1
    assert legality == [first.order, second.order]
    assert list(iter_findings(ctx, [second], ["O0"])) == []  # at O0 the copies keep the orders apart
    assert len(runs) == 2


def test_an_order_that_failed_is_checked_again(monkeypatch):
    def fails(run) -> Finding | None:
        return Finding(Stage.EXECUTE, None, "extra stage", Location(nodes=("late",)))

    extra = OracleStage(Stage.EXECUTE, (), fails, per_schedule=True, fatal=False)
    ctx = GraphContext(load_graph(READ_THEN_SAVE))
    topo = ScheduleChoice(ScheduleSource.SCHEDULER, None, "topo")
    first = list(iter_findings(ctx, [topo], ["O0"], (*CHAIN, extra)))
    again = list(iter_findings(ctx, [topo], ["O0"], (*CHAIN, extra)))
    assert len(first) == len(again) == 1 and ctx._passed == {}


def test_a_pipeline_that_changes_nothing_is_not_run_again(monkeypatch):
    import fuzz.oracle.stages.compile_run as compile_run
    from refcompiler.graph_json import graph_from_doc

    runs = []
    real = compile_run.run_compiled_each
    monkeypatch.setattr(compile_run, "run_compiled_each", lambda *a, **k: runs.append(1) or real(*a, **k))
    only_state = graph_from_doc(
        {
            "format": "refc-graph/1",
            "name": "only_state",
            "storage": [
                {"name": "A", "kind": "placeholder", "dtype": "float32", "shape": [4], "init": {"seed": 1}},
                {"name": "S", "kind": "owned", "dtype": "float32", "shape": [4], "owner": "acc"},
            ],
            "nodes": [{"name": "acc", "op": "accumulate", "inputs": ["A"], "state": ["S"]}],
        }
    )
    ctx = GraphContext(only_state)
    assert list(iter_findings(ctx, [ScheduleChoice(ScheduleSource.SCHEDULER, None, "topo")], ["O0", "O2"])) == []
    assert len(runs) == 1 and ctx.schedules == 1  # O2's program is O0's: run once, checked under both


def test_a_schedule_counts_once_per_distinct_order():
    # one node: every scheduler and every explicit source gives the same order
    one = _one_node_graph()
    report = check_case(Case(one), schedulers=("topo", "memory", "random"))
    assert report.finding is None and report.schedules == 1
    ctx = GraphContext(one)
    choices = [ScheduleChoice(ScheduleSource.SCHEDULER, None, s) for s in ("topo", "memory")]
    assert list(iter_findings(ctx, choices, ["O0", "O2"])) == [] and ctx.schedules == 1


def test_an_order_of_no_nodes_is_checked_but_not_counted():
    from refcompiler.graph_json import graph_from_doc

    doc = {
        "format": "refc-graph/1",
        "name": "dead",
        "storage": [{"name": "A", "kind": "placeholder", "dtype": "float32", "shape": [4], "init": {"seed": 1}}],
        "nodes": [{"name": "n", "op": "neg", "inputs": ["A"]}],  # nothing reads or saves it: all dead code
    }
    report = check_case(Case(graph_from_doc(doc)), schedulers=("topo", "memory"))
    assert report.finding is None and report.schedules == 0 and report.seconds["compile"] > 0  # compiled and run all the same


def _one_node_graph():
    from refcompiler.graph_json import graph_from_doc

    return graph_from_doc(
        {
            "format": "refc-graph/1",
            "name": "one",
            "storage": [{"name": "A", "kind": "placeholder", "dtype": "float32", "shape": [4], "init": {"seed": 1}}],
            "nodes": [{"name": "n", "op": "neg", "inputs": ["A"]}, {"name": "s", "op": "save", "inputs": ["n"], "attrs": {"target": "A"}}],
        }
    )


def test_each_stage_adds_up_its_time_and_a_slow_stage_shows(monkeypatch):
    import time

    from fuzz.oracle import chain
    from fuzz.oracle.stages import symbolic

    def slow(run):
        time.sleep(0.05)
        return None

    stages = tuple(OracleStage(s.name, s.invariants, slow, per_schedule=True) if s is symbolic.STAGE else s for s in CHAIN)
    ctx = GraphContext(_one_node_graph())
    assert list(iter_findings(ctx, [ScheduleChoice(ScheduleSource.SCHEDULER, None, "topo")], ["O0"], stages)) == []
    assert set(ctx.seconds) == {"verify", "reference", "proof", chain.SCHEDULES, "compile", "differential", "symbolic"}
    assert ctx.seconds["symbolic"] >= 0.05 > ctx.seconds["differential"]
    report = check_case(Case(_one_node_graph()))
    assert chain.SCHEDULES in report.seconds and all(v >= 0 for v in report.seconds.values())


def slow_pass(program):
    import time

    time.sleep(0.05)
    return program


def test_the_time_in_a_users_pass_is_shown_apart_from_the_stage_it_ran_in():
    # a quadratic pass of the user's made a campaign's compile stage 99.7% of its time
    from fuzz.oracle import chain

    report = check_case(Case(_one_node_graph()), pipeline=f"{__name__}:slow_pass", symbolic=False)
    assert report.finding is None
    assert report.seconds[chain.PLUGINS] >= 0.05 * report.schedules > 0
    assert report.seconds["compile"] < report.seconds[chain.PLUGINS]


ASKED: list[int] = []


def counted_topo(graph, deps, seed=0):
    """A user's scheduler that counts its calls: the topo scheduler's order, whatever the seed."""
    ASKED.append(seed)
    return list(resolve_scheduler("topo")(graph, deps, 0))


def counted_backwards(graph, deps, seed=0):
    """A user's scheduler that counts its calls and gives an illegal order (topo's, reversed)."""
    ASKED.append(seed)
    return list(reversed(resolve_scheduler("topo")(graph, deps, 0)))


def _scheduler_choices(name: str, seeds) -> list[ScheduleChoice]:
    return [ScheduleChoice(ScheduleSource.SCHEDULER, None, f"{__name__}:{name}", s) for s in seeds]


def _compile_order_calls(monkeypatch) -> list[tuple[str, ...]]:
    import fuzz.oracle.stages.compile_run as compile_run

    calls: list[tuple[str, ...]] = []
    real = compile_run.compile_order

    def spy(prepared, order, **kwargs):
        calls.append(tuple(order))
        return real(prepared, order, **kwargs)

    monkeypatch.setattr(compile_run, "compile_order", spy)
    return calls


def test_a_scheduler_is_asked_once_per_choice_whatever_the_pipelines(monkeypatch):
    ASKED.clear()
    ctx = GraphContext(load_graph(READ_THEN_SAVE), proof=False)
    found = list(iter_findings(ctx, _scheduler_choices("counted_topo", [5]), ["O0", "O2"]))
    assert found == [] and ASKED == [5] and ctx.schedules == 1


def test_a_scheduler_order_that_passed_is_not_compiled_again(monkeypatch):
    ASKED.clear()
    calls = _compile_order_calls(monkeypatch)
    ctx = GraphContext(load_graph(READ_THEN_SAVE), proof=False)
    found = list(iter_findings(ctx, _scheduler_choices("counted_topo", [1, 2, 3]), ["O0", "O2"]))
    assert found == [] and ASKED == [1, 2, 3]
    assert len(calls) == 2  # the first choice, under O0 and O2; the others gave the order that passed
    assert ctx.schedules == 1


def test_an_illegal_scheduler_order_is_compiled_and_reported_every_time(monkeypatch):
    ASKED.clear()
    calls = _compile_order_calls(monkeypatch)
    ctx = GraphContext(load_graph(READ_THEN_SAVE), proof=False)
    found = list(iter_findings(ctx, _scheduler_choices("counted_backwards", [1, 2]), ["O0", "O2"]))
    # each choice compiled (then ended by its finding); the second, a later schedule, under O2
    # first, then under O0, whose finding comes first as when O0 ran first (``_run_later``)
    assert ASKED == [1, 2] and len(calls) == 3
    assert [(f.signature.invariant, f.blame) for f in found] == [("SCH-1", f"{__name__}:counted_backwards")] * 2  # the user's, by name


def test_an_order_that_passed_under_one_pipeline_is_compiled_under_another(monkeypatch):
    calls = _compile_order_calls(monkeypatch)
    ctx = GraphContext(load_graph(READ_THEN_SAVE), proof=False)
    assert list(iter_findings(ctx, _scheduler_choices("counted_topo", [1]), ["O0"])) == []
    assert list(iter_findings(ctx, _scheduler_choices("counted_topo", [2]), ["O0", "O2"])) == []
    assert [len(c) > 0 for c in calls] == [True, True] and len(calls) == 2  # O0 once, then O2 only


def test_check_raises_for_a_pipeline_scheduler_or_mutant_that_names_nothing():
    """A typo is the caller's mistake: were it a finding, a Hypothesis test would
    report it as a compiler bug (and shrink it)."""
    graph = load_graph(READ_THEN_SAVE)
    for kwargs in ({"pipeline": "no_such_module_xyz:PIPELINE"}, {"pipeline": "O2,no_such_pass"}, {"scheduler": "no_such_scheduler"}, {"mutant": "no-such-mutant"}):
        with pytest.raises(UsageError):
            check(graph, **kwargs)
    assert check(graph, pipeline="O2", scheduler="memory") is None


def test_a_carried_case_of_the_same_graph_object_repeats_no_check(monkeypatch):
    """``refc fuzz --graph`` checks one graph object case after case: the
    second case starts from what the first knew (no per-graph stage, no
    order counted or program run again), and its own record starts empty."""
    import fuzz.oracle.stages.compile_run as compile_run
    from fuzz.oracle import Carry

    graph = load_graph(READ_THEN_SAVE)
    runs, prepares = _counting(monkeypatch, compile_run, "run_compiled_each"), _counting(monkeypatch, context, "prepare")
    references = _counting(monkeypatch, context, "run_reference")
    carry = Carry(graph)
    first = check_case(Case(graph), schedulers=("topo", "memory", "random"), seed=1, carry=carry)
    assert first.finding is None and first.schedules >= 3 and first.seconds[Stage.VERIFY.value] > 0
    ran, counted = len(runs), first.schedules
    again = check_case(Case(graph), schedulers=("topo", "memory", "random"), seed=1, carry=carry)
    assert again.finding is None and again.schedules == 0 and len(runs) == ran
    assert len(prepares) == 1 and len(references) == 2 and Stage.VERIFY.value not in again.seconds
    other = check_case(Case(graph), schedulers=("topo", "memory", "random"), seed=2, carry=carry)
    assert other.finding is None and other.schedules <= counted  # only orders the new seed drew that were not checked
    # an equal graph that is another object (a --graph case with other input seeds) starts afresh
    fresh = check_case(Case(load_graph(READ_THEN_SAVE)), schedulers=("topo", "memory", "random"), seed=1, carry=carry)
    assert fresh.schedules == counted and len(prepares) == 2 and len(references) == 4 and len(runs) == 2 * ran


def test_a_case_that_found_something_leaves_nothing_to_carry():
    """Only a case whose chain found nothing is carried: a bug found once is
    found again in every case of the graph, and a case carried under another
    mutant or expectation starts afresh."""
    from fuzz.oracle import Carry

    graph = load_graph(READ_THEN_SAVE)
    carry = Carry(graph)
    found = [check_case(Case(graph), mutant="sched-drop-save-war", seed=0, carry=carry).finding for _ in range(2)]
    assert found[0] is not None and found[1] is not None and found[0].signature == found[1].signature
    clean = check_case(Case(graph), seed=0, carry=carry)
    assert clean.finding is None and clean.schedules > 0
    again = check_case(Case(graph), mutant="sched-drop-save-war", seed=0, carry=carry).finding
    assert again is not None and again.signature == found[0].signature


def test_only_the_campaign_s_graph_is_carried():
    from fuzz.oracle import Carry

    graph, other = load_graph(READ_THEN_SAVE), load_graph(READ_THEN_SAVE)
    carry = Carry(graph)
    first = check_case(Case(other), seed=0, carry=carry)
    assert first.finding is None and check_case(Case(other), seed=0, carry=carry).schedules == first.schedules


def test_a_carried_context_keeps_knowledge_and_drops_the_case_s_record():
    ctx = GraphContext(load_graph(READ_THEN_SAVE), seed=3)
    topo = ScheduleChoice(ScheduleSource.SCHEDULER, None, "topo")
    assert list(iter_findings(ctx, [topo], ["O0", "O2"])) == []
    new = ctx.carried(7)
    assert {s.name for s in ctx.settled} == {Stage.VERIFY, Stage.REFERENCE, Stage.PROOF} and new.settled == ctx.settled
    assert (new.seed, new.schedules, new.seconds, new.scheduler_orders) == (7, 0, {}, {})
    assert new.orders_checked == ctx.orders_checked and new.orders_checked is not ctx.orders_checked
    assert new._passed == ctx._passed and new._passed is not ctx._passed
    assert new.reference is ctx.reference and new.compiler_prepared() is ctx.compiler_prepared()
    new.orders_checked.add(("x",))
    assert ("x",) not in ctx.orders_checked  # the earlier case's context is not changed by the later
    # other input values: what is known of the graph is kept, what is known of its runs is not
    values = {"A": np.arange(4, dtype=np.float32)}
    other = ctx.carried(8, values)
    assert {s.name for s in other.settled} == {Stage.VERIFY, Stage.PROOF} and other.inputs is values
    assert other.orders_checked == set() and other._passed == {} and other._passed_keys == set()
    assert other.compiler_prepared() is ctx.compiler_prepared() and other.symbolic_seen == ctx.symbolic_seen
    assert other.reference[0]["out"].tobytes() != ctx.reference[0]["out"].tobytes()
    assert other.reference[0]["out"].tobytes() == GraphContext(ctx.graph, inputs=values).reference[0]["out"].tobytes()


def test_a_carried_context_s_tables_start_afresh_past_their_bound(monkeypatch):
    ctx = GraphContext(load_graph(READ_THEN_SAVE))
    topo = ScheduleChoice(ScheduleSource.SCHEDULER, None, "topo")
    assert list(iter_findings(ctx, [topo], ["O0", "O2"])) == []
    assert ctx.carried(1).orders_checked == ctx.orders_checked != set()
    monkeypatch.setattr(context, "CARRIED_ENTRIES", ctx._entries() - 1)
    new = ctx.carried(1)
    assert new.orders_checked == set() and new._passed == {} and new.symbolic_seen == set() and new._illegal == {}
    assert new.settled == ctx.settled and new.compiler_prepared() is ctx.compiler_prepared()  # what the graph alone gives
    assert ctx.symbolic_seen != set()  # the earlier context keeps its own
