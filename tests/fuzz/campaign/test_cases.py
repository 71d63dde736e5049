"""The cases a campaign draws: over one given graph (``refc fuzz --graph``),
every case is that graph, with fresh seeds for its seeded run-time values."""

from __future__ import annotations

from pathlib import Path

from hypothesis import find, given, settings

from refcompiler.graph import StorageKind
from refcompiler.graph_json import load_graph
from refcompiler.reference import run_reference

from fuzz.campaign.cases import fuzz_cases, one_graph_cases
from fuzz.campaign.config import CampaignConfig
from fuzz.case import ExpectKind

ROOT = Path(__file__).resolve().parents[3]
GRAPH = load_graph(ROOT / "examples" / "clamped_ids.json")


@settings(max_examples=40, database=None)
@given(one_graph_cases(GRAPH))
def test_every_case_is_the_graph_with_only_seeded_run_time_values_redrawn(case):
    graph, expect, seed = case
    assert expect.kind is ExpectKind.PASS and 0 <= seed <= 2**16
    assert graph.nodes == GRAPH.nodes and [s.name for s in graph.storage] == [s.name for s in GRAPH.storage]
    for new, old in zip(graph.storage, GRAPH.storage, strict=True):
        fixed = old.kind is StorageKind.CONSTANT or old.init is None or old.init.seed is None
        if fixed:
            assert new == old
        else:
            assert (new.init.low, new.init.high, new.init.value) == (old.init.low, old.init.high, old.init.value)
    run_reference(graph, runs=2)  # int32 ids keep their [low, high): the max clamps them into the table


def _seeds(graph):  # type: ignore[no-untyped-def]
    return tuple(s.init.seed for s in graph.storage if s.init is not None)


def test_cases_shrink_to_the_graphs_own_values_and_also_draw_fresh_ones():
    simplest = find(one_graph_cases(GRAPH), lambda c: True, settings=settings(database=None))
    assert simplest[0] == GRAPH and _seeds(simplest[0]) == _seeds(GRAPH)
    fresh = find(one_graph_cases(GRAPH), lambda c: _seeds(c[0]) != _seeds(GRAPH), settings=settings(database=None))
    assert fresh[0].nodes == GRAPH.nodes


def test_the_config_selects_the_graph():
    config = CampaignConfig(max_cases=1, graph=GRAPH, graph_file="g.json", invalid_share=0.0)
    got = find(fuzz_cases(config), lambda c: True, settings=settings(database=None))
    assert got[0] == GRAPH
