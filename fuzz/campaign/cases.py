"""The cases a campaign draws, and the seed of each chunk."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from refcompiler.graph import Graph

from fuzz.campaign.config import CampaignConfig
from fuzz.case import PASS, Expect, reject
from fuzz.strategies import REJECTABLE, graphs, invalid_graphs

__all__ = ["chunk_seed", "fuzz_cases"]


def chunk_seed(campaign_seed: int, index: int) -> int:
    """The Hypothesis seed of chunk ``index``: a pure function of both."""
    return int(np.random.SeedSequence([campaign_seed, index]).generate_state(1)[0])


def fuzz_cases(config: CampaignConfig) -> st.SearchStrategy[tuple[Graph, Expect, int]]:
    """(graph, expectation, schedule seed): a valid graph, or with probability
    ``invalid_share`` one that breaks one of ``REJECTABLE``. Shrinks towards
    a valid graph and seed 0."""
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
