"""A stored failure: its provenance (``found_by``, the command that finds it
again), and a case that reads back and replays even when shrinking was cut short."""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path

from fuzz.campaign import CampaignConfig
from fuzz.campaign.failure import Example, finish, found_by
from fuzz.case import case_from_doc
from fuzz.corpus import load_case
from fuzz.oracle import check_case
from fuzz.replay import case_problem
from refcompiler.graph import Node, Ref
from specs import OpKind

CORPUS = Path(__file__).resolve().parents[3] / "corpus"


def test_found_by_names_what_was_under_test():
    assert found_by(CampaignConfig(seed=3)) == "refc fuzz --seed 3"
    config = CampaignConfig(seed=3, schedulers=("my_sched:schedule",), pipeline="my passes:PIPELINE", max_nodes=6, symbolic=False)
    words = shlex.split(found_by(config))
    assert words == ["refc", "fuzz", "--seed", "3", "--scheduler", "my_sched:schedule", "--pipeline", "my passes:PIPELINE",
                     "--max-nodes", "6", "--symbolic", "off"]


def test_found_by_keeps_the_mutant_target_and_graph():
    config = CampaignConfig(seed=1, mutant="sched-drop-save-war", target="onnxruntime", graph_file="g.json")
    assert found_by(config) == "refc fuzz --seed 1 --mutant sched-drop-save-war --target onnxruntime --graph g.json"


def test_a_failure_stored_unshrunk_names_its_dead_nodes_in_its_schedule_and_replays():
    # the compiled order lacks the dead node (dead code goes before scheduling); a case's schedule names every node
    mutant = "share-ignore-later-reads"
    case = load_case(CORPUS / f"mutant.{mutant}.json")
    dead = Node("dead", OpKind.NEG, (Ref("p0"),))
    graph = replace(case.graph, nodes=(dead, *case.graph.nodes))
    finding = check_case(graph, mutant=mutant).finding
    assert finding is not None and finding.order is not None and "dead" not in finding.order
    config = CampaignConfig(seed=0, mutant=mutant, out=None)
    failure = finish(config, Example(graph, case.expect, 0, finding), 0.0, stop=lambda: True)
    assert failure.nodes == 5  # not shrunk
    stored = case_from_doc(failure.case_doc)
    assert stored.schedule is not None and sorted(stored.schedule) == sorted(n.name for n in graph.nodes)
    assert case_problem(stored) is None
    assert failure.reproduces, failure.not_reproduced


def test_a_cases_versions_take_the_targets_and_survive_one_that_raises_or_exits(tmp_path, monkeypatch):
    # a user's target whose versions() called sys.exit ended the chunk before any case was stored
    from fuzz.campaign.failure import versions

    (tmp_path / "v7_targets.py").write_text(
        "import sys\n"
        "from tests.refcompiler.targets.fake_targets import Wrong\n"
        "class Exits(Wrong):\n"
        "    def versions(self):\n"
        "        sys.exit(3)\n"
        "class Odd(Wrong):\n"
        "    def versions(self):\n"
        "        return [('a', 'b')]\n"
        "class Named(Wrong):\n"
        "    def versions(self):\n"
        "        return {'mine': 2, 'numpy': 'not this one'}\n"
        "EXITS, ODD, NAMED = Exits(), Odd(), Named()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    plain = dict(versions())
    assert plain.keys() == {"refc", "numpy", "hypothesis", "z3-solver"}
    assert dict(versions("v7_targets:EXITS")) == plain
    assert dict(versions("v7_targets:ODD")) == plain
    assert dict(versions("v7_targets:NAMED")) == {**plain, "mine": "2"}  # refc's own names are not replaced


def test_every_case_checked_leaves_the_caches_of_its_objects_empty(monkeypatch):
    """``check_within`` empties the caches of graph and program objects after
    each case (``refcompiler.memos``), whether it passes or fails; not in a
    campaign over one graph (a ``Carry``), whose cases share its objects."""
    from fuzz.campaign import failure as failure_module
    from fuzz.campaign.config import CampaignConfig
    from fuzz.case import Case
    from refcompiler import memos
    from refcompiler.graph_json import load_graph

    forgot = []
    real = memos.forget
    monkeypatch.setattr(memos, "forget", lambda: forgot.append(1) or real())
    graph = load_graph(Path(__file__).resolve().parents[3] / "examples" / "read_then_save.json")
    config = CampaignConfig(budget=None, max_cases=1)
    ok = failure_module.check_within(config, Case(graph), seed=0, target=None, focus=None)
    wrong = failure_module.check_within(CampaignConfig(budget=None, max_cases=1, mutant="sched-drop-save-war"), Case(graph), seed=0, target=None, focus=None)
    assert ok.finding is None and wrong.finding is not None and forgot == [1, 1]
    from fuzz.oracle import Carry

    carried = failure_module.check_within(config, Case(graph), seed=1, target=None, focus=None, carry=Carry(graph))
    assert carried.finding is None and forgot == [1, 1]
