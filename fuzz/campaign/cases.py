"""The cases a campaign draws, and the seed of each chunk."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import strategies as st

from refcompiler.graph import Graph, StorageKind

from fuzz.campaign.config import CampaignConfig
from fuzz.case import PASS, Expect, reject
from fuzz.strategies import REJECTABLE, graphs, invalid_graphs
from fuzz.strategies.builder import MAX_SEED

__all__ = ["chunk_seed", "fuzz_cases", "one_graph_cases"]


def chunk_seed(campaign_seed: int, index: int) -> int:
    """The Hypothesis seed of chunk ``index``: a pure function of both."""
    return int(np.random.SeedSequence([campaign_seed, index]).generate_state(1)[0])


def fuzz_cases(config: CampaignConfig) -> st.SearchStrategy[tuple[Graph, Expect, int]]:
    """(graph, expectation, schedule seed): a valid graph, or with probability
    ``invalid_share`` one that breaks one of ``REJECTABLE``. Shrinks towards
    a valid graph and seed 0. With ``config.graph`` (``refc fuzz --graph``),
    every case is that graph (``one_graph_cases``)."""
    if config.graph is not None:
        return one_graph_cases(config.graph)
    # One slot per rejectable invariant, and enough "valid" slots for the share;
    # index 0 (where shrinking goes) is "valid" unless every case is invalid.
    p = config.invalid_share
    n_valid = 1 if p == 0 else round(len(REJECTABLE) * (1 - p) / p)
    choices: list[str | None] = [None] * n_valid + (list(REJECTABLE) if p > 0 else [])

    @st.composite
    def case(draw: st.DrawFn) -> tuple[Graph, Expect, int]:
        which = draw(st.sampled_from(choices))
        if which is None:
            graph, expect = draw(graphs(max_nodes=config.max_nodes)), PASS
        else:
            graph, expect = draw(invalid_graphs(which, max_nodes=config.max_nodes)), reject(which)
        return graph, expect, draw(st.integers(0, 2**16))

    return case()


def one_graph_cases(graph: Graph) -> st.SearchStrategy[tuple[Graph, Expect, int]]:
    """(graph, pass, schedule seed) for a campaign over one given, valid graph.
    Half of the cases (shrinking to none) redraw the seed of every placeholder and
    owned variable whose value is seeded, as the generator draws seeds; an int32
    one keeps its [low, high), so that ids stay in range. Constants and explicit
    values are the graph's: they are fixed."""
    seeded = [s.name for s in graph.storage if s.kind is not StorageKind.CONSTANT and s.init is not None and s.init.seed is not None]

    @st.composite
    def case(draw: st.DrawFn) -> tuple[Graph, Expect, int]:
        g = graph
        if seeded and draw(st.booleans()):
            seeds = {name: draw(st.integers(0, MAX_SEED)) for name in seeded}
            storage = tuple(replace(s, init=replace(s.init, seed=seeds[s.name])) if s.name in seeds else s for s in graph.storage)
            g = replace(graph, storage=storage)
        return g, PASS, draw(st.integers(0, 2**16))

    return case()
