"""A stored failure's provenance: ``found_by`` is the command that finds it again."""

from __future__ import annotations

import shlex

from fuzz.campaign import CampaignConfig
from fuzz.campaign.failure import found_by


def test_found_by_names_what_was_under_test():
    assert found_by(CampaignConfig(seed=3)) == "refc fuzz --seed 3"
    config = CampaignConfig(seed=3, schedulers=("my_sched:schedule",), pipeline="my passes:PIPELINE", max_nodes=6, symbolic=False)
    words = shlex.split(found_by(config))
    assert words == ["refc", "fuzz", "--seed", "3", "--scheduler", "my_sched:schedule", "--pipeline", "my passes:PIPELINE",
                     "--max-nodes", "6", "--symbolic", "off"]


def test_found_by_keeps_the_mutant_target_and_graph():
    config = CampaignConfig(seed=1, mutant="sched-drop-save-war", target="onnxruntime", graph_file="g.json")
    assert found_by(config) == "refc fuzz --seed 1 --mutant sched-drop-save-war --target onnxruntime --graph g.json"
