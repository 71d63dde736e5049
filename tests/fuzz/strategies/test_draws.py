"""The two backends of the builder's choices make the same graphs from the
same choices: the random one records them as Hypothesis does, and Hypothesis
replays (and shrinks) them."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, find, given, seed, settings
from hypothesis import strategies as st

from refcompiler.graph_json import load_graph
from refcompiler.verifier import violations

from fuzz.campaign.cases import fuzz_cases, one_graph_cases, random_case
from fuzz.campaign.config import CampaignConfig
from fuzz.case import ExpectKind
from fuzz.strategies import graphs
from fuzz.strategies.draws import Draws, HypothesisDraws, OneExample, RandomDraws, replayed
from fuzz.strategies.valid import build_graph

GRAPH = load_graph(Path(__file__).resolve().parents[3] / "examples" / "clamped_ids.json")


def _random_graphs(n: int, **kw):  # type: ignore[no-untyped-def]
    for k in range(n):
        d = RandomDraws(random.Random(k))
        yield build_graph(d, **kw), d.choices


def test_valid_graphs_drawn_at_random_replay_through_hypothesis_to_the_same_graph():
    for graph, choices in _random_graphs(60):
        assert violations(graph) == []
        assert replayed(graphs(), choices) == graph


def test_campaign_cases_valid_and_invalid_replay_to_the_same_case():
    config = CampaignConfig(budget=None, max_cases=1, invalid_share=0.5)
    kinds = set()
    for k in range(60):
        case, choices = random_case(config, 99, k)
        kinds.add(case[1].kind)
        assert replayed(fuzz_cases(config), choices) == case
    assert kinds == {ExpectKind.PASS, ExpectKind.REJECT}


def test_one_graph_cases_replay_to_the_same_case():
    config = CampaignConfig(budget=None, max_cases=1, graph=GRAPH, graph_file="g.json")
    reseeded = 0
    for k in range(20):
        case, choices = random_case(config, 5, k)
        reseeded += case[0] != GRAPH
        assert replayed(one_graph_cases(GRAPH), choices) == case == replayed(fuzz_cases(config), choices)
    assert 0 < reseeded < 20


def test_a_case_is_a_function_of_the_chunk_seed_and_its_index():
    config = CampaignConfig(budget=None, max_cases=1)
    assert random_case(config, 3, 7) == random_case(config, 3, 7)
    assert len({repr(random_case(config, 3, k)[0]) for k in range(10)}) == 10
    assert random_case(config, 3, 0)[0] != random_case(config, 4, 0)[0]


def test_the_random_backend_records_what_hypothesis_records():
    d = RandomDraws(random.Random(0))
    assert d.integer(2, 2) == 2 and d.choices == []  # st.integers(2, 2) is just(2): no choice
    i, b = d.integer(-3, 5), d.boolean()
    assert d.choices == [i, b] and type(d.choices[1]) is bool

    def both(draws: Draws):  # type: ignore[no-untyped-def]
        return (draws.integer(-3, 5), draws.boolean(), draws.choice("abcd"), draws.list_of(lambda: draws.integer(1, 4), 1, 3),
                draws.permutation(range(4)), sorted(draws.subset(3)), draws.integer(7, 7))

    strategy = st.composite(lambda draw: both(HypothesisDraws(draw)))()
    for k in range(30):
        r = RandomDraws(random.Random(k))
        drawn = both(r)
        assert replayed(strategy, r.choices) == drawn


def test_the_random_backend_draws_what_randint_draws():
    # a campaign's cases are a function of its seed: the backend's integers stay
    # the values random.Random.randint gives from the same generator
    for k in range(20):
        mine, theirs = RandomDraws(random.Random(k)), random.Random(k)
        for lo, hi in [(0, 1), (-3, 5), (0, 2**16), (1, 4), (0, 2**32 - 1), (5, 6), (0, 99)] * 5:
            assert mine.integer(lo, hi) == theirs.randint(lo, hi)
    with pytest.raises(ValueError):
        RandomDraws(random.Random(0)).integer(3, 2)


def test_lists_permutations_and_subsets_cover_their_range_and_shrink_to_the_simplest():
    seen_perm, seen_sub, sizes = set(), set(), set()
    for k in range(300):
        d = RandomDraws(random.Random(k))
        seen_perm.add(tuple(d.permutation(range(3))))
        seen_sub.add(frozenset(d.subset(3)))
        sizes.add(len(d.list_of(lambda: 0, 1, 3)))
    assert len(seen_perm) == 6 and len(seen_sub) == 7 and sizes == {1, 2, 3}
    simplest = st.composite(lambda draw: (HypothesisDraws(draw).permutation(range(4)), HypothesisDraws(draw).subset(4, 2),
                                          HypothesisDraws(draw).list_of(lambda: 1, 1, 3), HypothesisDraws(draw).choice("xyz")))()
    assert find(simplest, lambda v: True, settings=settings(database=None)) == ([0, 1, 2, 3], {0, 1}, [1], "x")


def test_hypothesis_shrinks_from_the_one_example_it_is_given():
    # a graph drawn at random with at least 6 nodes; Hypothesis replays it first, then shrinks
    graph, choices = next((g, c) for g, c in _random_graphs(200) if len(g.nodes) >= 6)
    calls = []

    @settings(database=OneExample(choices), phases=(Phase.reuse, Phase.shrink), suppress_health_check=list(HealthCheck), deadline=None)
    @seed(0)
    @given(graphs())
    def fails(g):  # type: ignore[no-untyped-def]
        calls.append(g)
        assert len(g.nodes) < 4

    with pytest.raises(AssertionError):
        fails()
    assert calls[0] == graph  # the given example came first: nothing generated
    # then shrunk to the smallest failing size, or one node above it: this
    # example ends as a move and a diamond on its result (and a save); deleting
    # the move makes the diamond make its own activation, as many nodes
    assert len(calls[-1].nodes) <= 5 and len(calls) > 2


def test_an_example_that_does_not_fail_is_not_shrunk():
    graph, choices = next(_random_graphs(1))
    calls = []

    @settings(database=OneExample(choices), phases=(Phase.reuse, Phase.shrink), suppress_health_check=list(HealthCheck))
    @given(graphs())
    def passes(g):  # type: ignore[no-untyped-def]
        calls.append(g)

    passes()
    assert calls == [graph]
