"""``fuzz.replay``: each verdict on a case built to get it."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from refcompiler.errors import MalformedInput

from fuzz.case import case_from_doc
from fuzz.corpus import load_case
from fuzz.replay import ASKED_AGAIN, Verdict, case_problem, exit_code, judge, plugin_modules

ROOT = Path(__file__).resolve().parents[2]
SGD = json.loads((ROOT / "examples" / "sgd_momentum.json").read_text())
MUTANT_CASE = ROOT / "corpus" / "mutant.lower-state-no-writeback.json"


def _case(**fields):
    return case_from_doc({**SGD, **fields})


def test_a_plain_case_is_ok_and_names_no_plugin():
    case = _case()
    assert plugin_modules(case) == ()
    assert judge(case).verdict is Verdict.OK


def test_plugins_are_listed_without_importing_them():
    case = _case(pipeline="O2,no_such_module_h8:passes,os:fork")
    assert plugin_modules(case) == ("no_such_module_h8", "os")
    assert case_problem(case) is None  # the plug-in items are not resolved


def test_an_unmet_expectation_is_regressed():
    out = judge(_case(expect={"reject": "OWN-4"}))
    assert out.verdict is Verdict.REGRESSED and "expected reject OWN-4" in out.detail


def test_a_mutant_case_must_still_kill_its_mutant():
    case = load_case(MUTANT_CASE)
    assert judge(case).verdict is Verdict.OK and "kills lower-state-no-writeback" in judge(case).detail
    # the same graph recorded against a mutant it does not kill
    wrong = replace(case, mutant="verify-allow-two-saves")
    out = judge(wrong)
    assert out.verdict is Verdict.REGRESSED and "no longer kills its mutant verify-allow-two-saves" in out.detail


def test_replay_against_a_mutant_says_kills_or_no_longer_kills():
    case = load_case(MUTANT_CASE)
    assert judge(case, mutant="lower-state-no-writeback").detail == "kills lower-state-no-writeback"
    other = judge(case, mutant="verify-allow-two-saves")
    assert other.verdict is Verdict.OK and other.detail == "does not kill verify-allow-two-saves"
    recorded = replace(case, mutant="verify-allow-two-saves")
    assert judge(recorded, mutant="verify-allow-two-saves").verdict is Verdict.REGRESSED


NODES = [n["name"] for n in SGD["nodes"]]


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"pipeline": "O7"}, "pipeline: unknown pass 'O7'"),
        ({"mutant": "no-such-mutant"}, "mutant: unknown mutant 'no-such-mutant'"),
        ({"schedule": NODES[1:]}, f"schedule: misses: '{NODES[0]}'"),
        ({"schedule": NODES + NODES[:1]}, f"schedule: names a node twice: '{NODES[0]}'"),
        ({"schedule": NODES + ["nope"]}, "schedule: names no node: 'nope'"),
        ({"scheduler": "no-such-scheduler"}, "scheduler: unknown scheduler 'no-such-scheduler'"),
        ({"schedule": NODES + ["x\x1b[2J"] * 20}, "schedule: names no node: 'x\\x1b[2J', "),
    ],
)
def test_a_case_that_cannot_be_checked_is_malformed(fields, message):
    out = judge(_case(**fields))
    assert out.verdict is Verdict.MALFORMED and out.detail.startswith(message)


@pytest.mark.parametrize("fields", [{"mutant": "m" * 300_000}, {"pipeline": "O" * 100_000}])
def test_a_long_unknown_name_is_cut_short_in_the_verdict(fields):
    # a 300,000-character mutant name was written back whole, one line of stdout or stderr
    out = judge(_case(**fields))
    assert out.verdict is Verdict.MALFORMED and len(out.detail) < 2_000 and "characters)" in out.detail


def test_a_graph_whose_results_pass_the_limits_is_malformed_not_a_regression():
    # a broadcast of [N, 1] and [1, N] is found too large by shape inference: it was "regressed: crash at verify"
    storage = SGD["storage"] + [{"name": "big_u", "kind": "placeholder", "dtype": "float32", "shape": [100000, 1]},
                                {"name": "big_v", "kind": "placeholder", "dtype": "float32", "shape": [1, 100000]}]
    nodes = SGD["nodes"] + [{"name": "big_t", "op": "add", "inputs": ["big_u", "big_v"]}]
    out = judge(_case(storage=storage, nodes=nodes))
    assert out.verdict is Verdict.MALFORMED and "more than the limit 16777216 (REFC_MAX_ELEMENTS)" in out.detail


def test_an_illegal_stored_schedule_is_malformed():
    assert judge(_case(schedule=NODES)).verdict is Verdict.OK  # the file's order is a legal one
    out = judge(_case(schedule=NODES[::-1]))  # every node, but a result before its inputs
    assert out.verdict is Verdict.MALFORMED and "not a legal order" in out.detail


@pytest.mark.parametrize("invariant", ["SEM-1", "SCH-1", "IR-4", "MEM-1", "NOPE"])
def test_reject_names_only_a_verifier_invariant(invariant):
    with pytest.raises(MalformedInput, match="not an invariant the verifier rejects with"):
        _case(expect={"reject": invariant})


def test_the_exit_code_reflects_every_case():
    assert exit_code(Counter({Verdict.OK: 3})) == 0
    assert exit_code(Counter({Verdict.OK: 3, Verdict.REGRESSED: 1})) == 1
    assert exit_code(Counter({Verdict.REGRESSED: 1, Verdict.NEEDS_PLUGIN: 1})) == 2
    assert exit_code(Counter({Verdict.MALFORMED: 1})) == 2


def test_a_long_wrong_schedule_is_one_short_line():
    import time

    many = [f"n{i}" for i in range(60_000)]
    start = time.monotonic()
    out = judge(_case(schedule=many))
    assert time.monotonic() - start < 10
    assert out.verdict is Verdict.MALFORMED and out.detail.endswith("and 59992 more") and len(out.detail) < 200


@pytest.mark.parametrize("fields", [
    {"pipeline": "O2,no_such_module_h9:PASSES"},
    {"scheduler": "no_such_module_h9:schedule", "scheduler_seed": 1},
    {"target": {"name": "no_such_module_h9:TARGET", "configurations": [], "failing": None, "passing": None}},
    {"pipeline": "json:no_such_attribute"},
])
def test_an_allowed_plugin_that_cannot_be_loaded_is_needs_plugin_not_regressed(fields):
    """Replayed from a directory where the user's module does not import, a case
    was 'regressed' (exit 1: a setup problem reported as a compiler bug), and
    against a mutant it 'killed' it."""
    case = _case(**fields)
    for mutant in (None, "share-ignore-views"):
        out = judge(case, mutant=mutant)
        assert out.verdict is Verdict.NEEDS_PLUGIN and out.detail.startswith("needs plug-in "), out
        assert "PYTHONPATH" in out.detail


def test_a_case_that_fails_otherwise_than_it_recorded_says_how_it_was_recorded():
    from fuzz.case import FindingRecord

    case = load_case(MUTANT_CASE)
    now = judge(case).detail
    assert "recorded as" not in now  # no record: nothing to compare
    same = replace(case, finding=FindingRecord("IR-5 at compile by lowering"))
    assert judge(same).detail == now
    other = replace(case, finding=FindingRecord("SEM-1 at differential by lowering"))
    out = judge(other)
    assert out.verdict is Verdict.OK and out.detail == f"{now} (now as IR-5 at compile by lowering, recorded as SEM-1 at differential by lowering)"
    # an expectation that fails: the finding, then how it was recorded
    regressed = judge(replace(_case(expect={"reject": "OWN-4"}), finding=FindingRecord("G-1 at verify")))
    assert regressed.verdict is Verdict.REGRESSED and regressed.detail.endswith("(recorded as G-1 at verify)")
    # a file's text: escaped and cut short
    hostile = judge(replace(case, finding=FindingRecord("\x1b[2J" + "x" * 500))).detail
    assert "\x1b" not in hostile and "\\x1b[2J" in hostile and hostile.endswith("...)") and len(hostile) < 400


def test_a_scheduler_that_answers_otherwise_when_asked_again_cannot_pass(tmp_path, monkeypatch):
    # a scheduler shuffling with its own randomness: its recorded bug shows only sometimes,
    # and a replay that happened to pass said "ok" (exit 0) with a note
    (tmp_path / "r9_flaky.py").write_text(
        "calls = []\n"
        "def schedule(graph, deps, seed):\n"
        "    calls.append(seed)\n"
        "    if len(calls) % 2:\n"
        "        return ['sum', 'late', 's', 'save_late']\n"
        "    return ['late', 'sum', 's', 'save_late']\n"
        "def steady(graph, deps, seed):\n"
        "    calls.append(seed)\n"
        "    return ['late', 'sum', 's', 'save_late']\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import r9_flaky

    doc = json.loads((ROOT / "examples" / "read_then_save.json").read_text())
    case = case_from_doc({**doc, "expect": "pass", "scheduler": "r9_flaky:schedule", "scheduler_seed": 3,
                          "scheduler_order": ["sum", "late", "s", "save_late"]})
    outcome = judge(case)
    assert outcome.verdict is Verdict.REGRESSED and outcome.detail == (
        "pass this time, but r9_flaky:schedule gave another order when asked again for the same graph and seed 3 "
        "(sum late s save_late, then late sum s save_late): a scheduler must be a function of the graph and the seed, "
        "or the bug the case records shows only sometimes"), outcome
    assert r9_flaky.calls == [3, 3]  # the check's answer, then one more
    # a scheduler that gives one order: asked again ASKED_AGAIN times, and the note compares the order checked
    r9_flaky.calls.clear()
    outcome = judge(replace(case, scheduler="r9_flaky:steady"))
    assert outcome.verdict is Verdict.OK and "r9_flaky:steady now orders the graph otherwise" in outcome.detail, outcome
    assert r9_flaky.calls == [3] * (1 + ASKED_AGAIN)
