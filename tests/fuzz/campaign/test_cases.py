"""The cases a campaign draws: invalid ones spread over every invariant and
edit; over one given graph (``refc fuzz --graph``), every case is that graph,
with fresh seeds for its seeded run-time values."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, find, given, settings

from refcompiler.errors import InternalError, InvariantViolation

from refcompiler.graph import StorageKind
from refcompiler.graph_json import graph_from_doc, graph_to_doc, load_graph
from refcompiler.reference import run_reference

from fuzz.campaign import cases as cases_module
from fuzz.campaign.cases import chunk_seed, edit_of, fuzz_cases, one_graph_cases
from fuzz.campaign.chunk import Chunk, run_chunk
from fuzz.campaign.config import CampaignConfig
from fuzz.case import ExpectKind
from fuzz.strategies import REJECTABLE, graphs
from fuzz.strategies.invalid import edit_count

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


# ids drawn in [0, 8) for a table of 5 rows: its own seed (6) happens to draw 3, 4, 4
LUCKY_IDS = graph_from_doc({"format": "refc-graph/1", "name": "lucky_ids", "storage": [
    {"name": "ids", "kind": "placeholder", "dtype": "int32", "shape": [3], "init": {"seed": 6, "low": 0, "high": 8}},
    {"name": "g", "kind": "placeholder", "dtype": "float32", "shape": [3, 2], "init": {"seed": 2}},
    {"name": "tbl", "kind": "owned", "dtype": "float32", "shape": [5, 2], "owner": "emb", "init": {"seed": 3}}], "nodes": [
    {"name": "emb", "op": "embedding_update", "inputs": ["ids", "g"], "state": ["tbl"]}]})


@settings(max_examples=40, database=None)
@given(one_graph_cases(LUCKY_IDS))
def test_a_redraw_of_ids_the_reference_cannot_run_is_no_case(case):
    # refc fuzz --graph stored "error at reference: ... embedding id 5 is out of
    # range for a table of 5 rows" as a finding, against a correct compiler
    run_reference(case[0], runs=2)


def test_ids_are_still_redrawn_where_the_reference_runs_them():
    fresh = find(one_graph_cases(LUCKY_IDS), lambda c: _seeds(c[0])[0] != _seeds(LUCKY_IDS)[0], settings=settings(database=None))
    run_reference(fresh[0], runs=2)


def test_the_config_selects_the_graph():
    config = CampaignConfig(max_cases=1, graph=GRAPH, graph_file="g.json", invalid_share=0.0)
    got = find(fuzz_cases(config), lambda c: True, settings=settings(database=None))
    assert got[0] == GRAPH


def test_the_edit_of_an_invalid_case_is_a_function_of_its_graph_that_reaches_every_edit():
    graphs_ = [g for g, _ in zip(_distinct_graphs(), range(300))]
    slots = Counter(edit_of(g) for g in graphs_)
    assert all(edit_of(g) == edit_of(g) for g in graphs_[:20])
    every = {(inv, k) for inv in REJECTABLE for k in range(edit_count(inv))}
    assert set(slots) == every, every - set(slots)


def _distinct_graphs():  # type: ignore[no-untyped-def]
    seen: set[str] = set()
    found: list = []

    @settings(max_examples=400, database=None, suppress_health_check=list(HealthCheck))
    @given(graphs(max_nodes=6))
    def collect(g):  # type: ignore[no-untyped-def]
        key = json.dumps(graph_to_doc(g), sort_keys=True)
        if key not in seen:
            seen.add(key)
            found.append(g)

    collect()
    return found


def test_a_chunk_spreads_its_invalid_cases_over_the_invariants_and_edits(monkeypatch):
    # Hypothesis copies parts of earlier examples into new ones: an edit drawn
    # as a choice of its own came up 7 times in one chunk of 50 with 3 others
    made: dict[str, tuple[str, int]] = {}
    real = cases_module.break_graph

    def spy(d, graph, invariant, edit):  # type: ignore[no-untyped-def]
        made.setdefault(json.dumps(graph_to_doc(graph), sort_keys=True), (invariant, edit))
        return real(d, graph, invariant, edit)

    monkeypatch.setattr(cases_module, "break_graph", spy)
    config = CampaignConfig(budget=None, max_cases=150, invalid_share=0.5, max_nodes=6)
    # a statistical bound at a fixed seed: 7 put 16 of 77 graphs in one slot
    # (bound 15.4) once diamonds drew one choice more; seeds 8 to 10 give 11 or 12
    for index in range(3):
        run_chunk(Chunk(index, chunk_seed(8, index), 50, config))
    per_slot = Counter(made.values())
    assert len(made) >= 40, len(made)
    assert {inv for inv, _ in per_slot} == set(REJECTABLE)
    assert len(per_slot) >= 12 and max(per_slot.values()) <= len(made) / 5, per_slot


def test_an_error_of_the_generator_itself_is_an_internal_error_not_a_finding(monkeypatch):
    def broken_generator(d, max_nodes, max_dim):  # type: ignore[no-untyped-def]
        d.integer(0, 3)
        raise InvariantViolation("G-1", "the generator built an ill-typed graph")

    monkeypatch.setattr(cases_module, "build_graph", broken_generator)
    with pytest.raises(InternalError, match="case generator or oracle: InvariantViolation: G-1"):
        run_chunk(Chunk(0, chunk_seed(0, 0), 5, CampaignConfig(budget=None, max_cases=5)))


def test_a_chunk_says_where_its_time_went():
    config = CampaignConfig(budget=None, max_cases=20, out=None)
    start = time.time()
    result = run_chunk(Chunk(0, chunk_seed(3, 0), 20, config))
    took = time.time() - start
    seconds = dict(result.seconds_by_stage)
    assert {"generate", "verify", "compile", "symbolic"} <= set(seconds) and "reduce" not in seconds  # nothing failed
    assert all(v >= 0 for v in seconds.values()) and sum(seconds.values()) <= took + 0.01
    found = run_chunk(Chunk(0, chunk_seed(3, 0), 50, CampaignConfig(budget=None, max_cases=50, out=None, mutant="alloc-early-free")))
    assert found.found and dict(found.seconds_by_stage)["reduce"] > 0  # its failure was reduced
