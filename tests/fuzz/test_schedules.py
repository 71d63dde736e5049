"""Schedule generators: legal under the model of the calling context, complete
for small graphs, deterministic in their seed."""

from __future__ import annotations

import importlib
import itertools
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from refcompiler.deps import check_schedule, dependency_graph, is_legal
from refcompiler.driver import scheduled_graph
from refcompiler.graph_json import load_graph
from refcompiler.mutants import activate

from fuzz.schedules import (
    ScheduleChoice,
    ScheduleSource,
    case_schedules,
    random_legal_order,
    schedules,
)
from fuzz.strategies import graphs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@given(graphs(), st.integers(0, 2**16))
def test_random_legal_orders_are_legal(graph, seed):
    g = scheduled_graph(graph)
    order = random_legal_order(g, dependency_graph(g), random.Random(seed))
    check_schedule(g, order)


@given(graphs(), st.integers(0, 100))
def test_case_schedules_are_legal_distinct_and_deterministic(graph, seed):
    g = scheduled_graph(graph)
    choices = case_schedules(g, seed=seed, schedulers=("topo", "memory"))
    assert choices == case_schedules(g, seed=seed, schedulers=("topo", "memory"))
    assert [c.scheduler for c in choices[:2]] == ["topo", "memory"]
    explicit = [c.order for c in choices if c.order is not None]
    assert len(explicit) == len(set(explicit))
    for order in explicit:
        check_schedule(g, order)


@given(st.data())
def test_the_schedules_strategy_draws_legal_orders(data):
    graph = scheduled_graph(data.draw(graphs(max_nodes=6)))
    choice = data.draw(schedules(graph))
    assert isinstance(choice, ScheduleChoice)
    if choice.order is not None:
        check_schedule(graph, choice.order)
    else:
        assert choice.source is ScheduleSource.SCHEDULER


@pytest.mark.parametrize("name", ["read_then_save", "quantization_profile", "embedding_update"])
def test_every_legal_order_of_a_small_graph(name):
    graph = load_graph(EXAMPLES / f"{name}.json")
    choices = case_schedules(graph, seed=0)
    assert any(c.source is ScheduleSource.EXHAUSTIVE for c in choices)
    # explicit orders are deduplicated: random and adversarial ones come first
    orders = {c.order for c in choices if c.order is not None}
    # brute force over every permutation, an independent check
    legal = {p for p in itertools.permutations(n.name for n in graph.nodes) if is_legal(graph, p)}
    assert orders == legal
    assert len(legal) > 1


def test_adversarial_order_runs_writers_early():
    graph = load_graph(EXAMPLES / "read_then_save.json")
    (adv,) = [c.order for c in case_schedules(graph, seed=0, exhaustive_limit=0) if c.source is ScheduleSource.ADVERSARIAL]
    # the save into A waits only for its readers: it comes before save_late
    assert adv.index("s") < adv.index("save_late")


def test_orders_follow_the_model_of_the_calling_context():
    # under a mutant without write-after-read edges, random orders may run the
    # save into A before the read of A: that is how the wrong model is exposed
    graph = load_graph(EXAMPLES / "read_then_save.json")
    with activate("sched-drop-save-war"):
        orders = {random_legal_order(graph, dependency_graph(graph), random.Random(s)) for s in range(40)}
    assert any(not is_legal(graph, o) for o in orders)
    correct = {random_legal_order(graph, dependency_graph(graph), random.Random(s)) for s in range(40)}
    assert all(is_legal(graph, o) for o in correct)


def test_save_cycles_are_broken_before_scheduling():
    # two saves that swap p and q: memory edges close a cycle, so the graph as
    # given has no legal order; scheduled_graph() breaks it as the compiler does
    with pytest.raises(InvalidArgument):
        schedules(_swap_graph())
    g = scheduled_graph(_swap_graph())
    explicit = [c.order for c in case_schedules(g, seed=1) if c.order is not None]
    assert explicit and all(is_legal(g, o) for o in explicit)


def _swap_graph():
    from refcompiler.graph_json import graph_from_doc

    return graph_from_doc(
        {
            "format": "refc-graph/1",
            "name": "swap",
            "storage": [
                {"name": "p", "kind": "placeholder", "dtype": "float32", "shape": [2], "init": {"seed": 1}},
                {"name": "q", "kind": "placeholder", "dtype": "float32", "shape": [2], "init": {"seed": 2}},
            ],
            "nodes": [
                {"name": "s1", "op": "save", "inputs": ["p"], "attrs": {"target": "q"}},
                {"name": "s2", "op": "save", "inputs": ["q"], "attrs": {"target": "p"}},
            ],
        }
    )


def test_schedules_validates_its_arguments():
    graph = load_graph(EXAMPLES / "read_then_save.json")
    with pytest.raises(InvalidArgument):
        schedules(graph, sources=[])
    with pytest.raises(InvalidArgument):
        schedules(graph, sources=["random"])


def test_a_users_scheduler_is_called_with_many_distinct_seeds():
    from fuzz.schedules import PLUGIN_SEEDS, scheduler_choices

    plugin = scheduler_choices("mine:schedule", 7)
    assert len({c.seed for c in plugin}) == PLUGIN_SEEDS >= 16 and plugin[0].seed == 7
    assert plugin == scheduler_choices("mine:schedule", 7) and plugin != scheduler_choices("mine:schedule", 8)
    (builtin,) = scheduler_choices("topo", 7)
    assert builtin.seed is None and "seed" not in builtin.describe()


def _flaky(graph, deps, seed=0):
    """A user's scheduler: one legal order for every seed but one, whose order
    runs the save of A before the read of A in 'late'."""
    return ["sum", "s", "late", "save_late"] if seed == _flaky.wrong_seed else ["sum", "late", "s", "save_late"]


def test_a_users_scheduler_is_called_often_and_each_distinct_order_checked_once(monkeypatch):
    fs = importlib.import_module("fuzz.schedules")
    graph = scheduled_graph(load_graph(EXAMPLES / "read_then_save.json"))
    deps = dependency_graph(graph)
    monkeypatch.setattr(fs, "resolve_scheduler", lambda spec: _flaky)
    case = _a_case_seed(fs, full=True)  # a case on which every call is made
    calls = fs.scheduler_choices("mine:schedule", case)  # without the graph: PLUGIN_SEEDS seeds, none called
    # the seed of the wrong order is among the PLUGIN_CALLS calls but not among the first PLUGIN_SEEDS
    called, probe = fs.plugin_calls("mine:schedule", case)
    assert probe is None and called[0] == case and len(set(called)) == fs.PLUGIN_CALLS
    _flaky.wrong_seed = called[fs.PLUGIN_CALLS - 3]
    assert _flaky.wrong_seed not in {c.seed for c in calls} and fs.PLUGIN_CALLS > 4 * fs.PLUGIN_SEEDS
    seeds = [c.seed for c in fs.scheduler_choices("mine:schedule", case, graph, deps)]
    assert seeds == [_flaky.wrong_seed, case]  # two distinct orders: the one the model rejects first
    # on another case, the first PLUGIN_PROBE seeds all gave one order: the calls ended there
    other = _a_case_seed(fs, full=False)
    _flaky.wrong_seed = fs.plugin_calls("mine:schedule", other)[0][fs.PLUGIN_CALLS - 3]
    assert [c.seed for c in fs.scheduler_choices("mine:schedule", other, graph, deps)] == [other]


def _a_case_seed(fs, *, full: bool) -> int:
    """The first case seed on which a user's scheduler ``mine:schedule`` is called with
    every seed (``full``), or only until ``PLUGIN_PROBE`` calls have all given one order."""
    return next(seed for seed in range(1000) if (fs.plugin_calls("mine:schedule", seed)[1] is None) == full)


def test_one_case_in_plugin_full_every_calls_a_users_scheduler_with_every_seed():
    fs = importlib.import_module("fuzz.schedules")
    full = sum(fs.plugin_calls("mine:schedule", seed)[1] is None for seed in range(800))
    assert 800 / fs.PLUGIN_FULL_EVERY / 2 < full < 800 / fs.PLUGIN_FULL_EVERY * 2
    assert fs.plugin_calls("mine:schedule", 5) == fs.plugin_calls("mine:schedule", 5) != fs.plugin_calls("other:schedule", 5)


@pytest.mark.parametrize("full", [True, False])
def test_a_deterministic_users_scheduler_is_asked_until_the_probe_shows_it(monkeypatch, full):
    fs = importlib.import_module("fuzz.schedules")
    graph = scheduled_graph(load_graph(EXAMPLES / "read_then_save.json"))
    asked: list[int] = []

    def deterministic(g, deps, seed=0):
        asked.append(seed)
        return ["sum", "late", "s", "save_late"]

    def two_orders(g, deps, seed=0):  # the seed matters, but only for the first few seeds
        asked.append(seed)
        return ["sum", "s", "late", "save_late"] if len(asked) == 2 else ["sum", "late", "s", "save_late"]

    case = _a_case_seed(fs, full=full)
    monkeypatch.setattr(fs, "resolve_scheduler", lambda spec: deterministic)
    assert [c.seed for c in fs.scheduler_choices("mine:schedule", case, graph, dependency_graph(graph))] == [case]
    assert asked == fs.plugin_calls("mine:schedule", case)[0][: fs.PLUGIN_CALLS if full else fs.PLUGIN_PROBE]
    asked.clear()
    monkeypatch.setattr(fs, "resolve_scheduler", lambda spec: two_orders)
    choices = fs.scheduler_choices("mine:schedule", case, graph, dependency_graph(graph))
    assert len(asked) == fs.PLUGIN_CALLS and len(choices) == 2  # two orders within the probe: every seed asked


def test_a_users_scheduler_that_raises_keeps_that_seed_first(monkeypatch):
    fs = importlib.import_module("fuzz.schedules")
    graph = scheduled_graph(load_graph(EXAMPLES / "read_then_save.json"))

    def broken(graph, deps, seed=0):
        if seed != 7:
            raise SystemExit(3)
        return ["sum", "late", "s", "save_late"]

    monkeypatch.setattr(fs, "resolve_scheduler", lambda spec: broken)
    seeds = [c.seed for c in fs.scheduler_choices("mine:schedule", 7, graph, dependency_graph(graph))]
    assert len(seeds) == 2 and seeds[1] == 7 and seeds[0] != 7


def test_a_user_scheduler_that_calls_os_exit_or_prints_is_called_guarded(tmp_path, monkeypatch, capsys):
    from fuzz.schedules import scheduler_choices

    (tmp_path / "h5_exiting_sched.py").write_text(
        "import os\ncalls = []\ndef schedule(graph, deps, seed):\n    calls.append(seed)\n    print('chatty')\n    os._exit(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = scheduled_graph(load_graph(Path(__file__).resolve().parents[2] / "examples" / "sgd_momentum.json"))
    choices = scheduler_choices("h5_exiting_sched:schedule", 0, graph, dependency_graph(graph))
    assert len(choices) == 1  # the first call failed: its seed is kept, for the compile stage to report
    out, err = capsys.readouterr()
    assert "chatty" not in out and "chatty" in err


def test_a_deadline_of_refcs_own_passes_through_a_users_call():
    from fuzz.time_limit import CaseTimeout
    from refcompiler.plugins import call_untrusted

    def slow() -> None:
        raise CaseTimeout(1.0)

    with pytest.raises(CaseTimeout):
        call_untrusted(slow, "the scheduler mine")


def test_a_users_scheduler_is_asked_for_every_seed_under_guards_set_up_once(monkeypatch):
    import signal

    fs = importlib.import_module("fuzz.schedules")
    graph = scheduled_graph(load_graph(EXAMPLES / "read_then_save.json"))
    seen_graphs: list[object] = []

    def mine(g, deps, seed=0):
        seen_graphs.append(g)
        g.__dict__["poked"] = seed  # what a user's code may change: the copy it was given
        return ["sum", "late", "s", "save_late"]

    swaps: list[int] = []
    real_signal = signal.signal
    monkeypatch.setattr(signal, "signal", lambda sig, handler: swaps.append(sig) or real_signal(sig, handler))
    monkeypatch.setattr(fs, "resolve_scheduler", lambda spec: mine)
    case = _a_case_seed(fs, full=True)
    choices = fs.scheduler_choices("mine:schedule", case, graph, dependency_graph(graph))
    assert len(seen_graphs) == fs.PLUGIN_CALLS and len(choices) == 1  # one order, from every seed
    assert len({id(g) for g in seen_graphs}) > 1 and all(g is not graph for g in seen_graphs)  # a fresh copy each call
    assert "poked" not in graph.__dict__
    assert len(swaps) <= 4  # the signal handlers wrapped once for the calls, not per call
