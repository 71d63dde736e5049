"""The cases a campaign draws, and the seed of each chunk."""

from __future__ import annotations

import functools
import hashlib
import json
import random
from dataclasses import replace
from fractions import Fraction

import numpy as np
from hypothesis import strategies as st

from specs import Dtype

from refcompiler.errors import ExecutionError
from refcompiler.graph import Graph, Init, StorageKind
from refcompiler.graph_json import graph_to_doc
from refcompiler.reference import run_reference

from fuzz.campaign.config import CampaignConfig
from fuzz.case import PASS, Expect, reject
from fuzz.strategies import REJECTABLE
from fuzz.strategies.builder import MAX_SEED
from fuzz.strategies.draws import Choice, Draws, HypothesisDraws, RandomDraws
from fuzz.strategies.invalid import break_graph, edit_count
from fuzz.strategies.valid import build_graph

__all__ = ["Case3", "chunk_seed", "draw_case", "edit_of", "fuzz_cases", "input_seeds", "one_graph_case", "one_graph_cases", "random_case"]

Case3 = tuple[Graph, Expect, int]  # (graph, expectation, schedule seed)


def chunk_seed(campaign_seed: int, index: int) -> int:
    """The seed of chunk ``index`` (its cases are drawn from it): a pure function of both."""
    return int(np.random.SeedSequence([campaign_seed, index]).generate_state(1)[0])


def fuzz_cases(config: CampaignConfig) -> st.SearchStrategy[Case3]:
    """(graph, expectation, schedule seed), as ``draw_case`` makes them, one
    Hypothesis draw per choice: what a chunk's failure shrinks through."""

    @st.composite
    def case(draw: st.DrawFn) -> Case3:
        return draw_case(HypothesisDraws(draw), config)

    return case()


def random_case(config: CampaignConfig, seed: int, k: int) -> tuple[Case3, list[Choice]]:
    """Case ``k`` of the chunk with seed ``seed`` (a pure function of both),
    its choices made at random, and those choices as Hypothesis records them:
    replayed through ``fuzz_cases(config)`` they give the same case."""
    d = RandomDraws(random.Random((seed << 32) + k))
    return draw_case(d, config), d.choices


def draw_case(d: Draws, config: CampaignConfig) -> Case3:
    """(graph, expectation, schedule seed): a valid graph, or with probability
    ``invalid_share`` one that breaks one of ``REJECTABLE``. Shrinks towards
    a valid graph and seed 0. With ``config.graph`` (``refc fuzz --graph``),
    every case is that graph (``one_graph_case``).

    An invalid case is a valid graph plus one edit, and which invariant and
    edit is a function of that graph (``edit_of``), not a choice of its own:
    Hypothesis made many of a chunk's examples by copying parts of earlier
    ones, so a drawn choice repeated within a chunk (a chunk of 50 had the same
    edit 7 times and 3 other edits only, another no invalid case at all),
    while the graphs it copied into differed. Each invariant gets its share, and
    within it each edit."""
    if config.graph is not None:
        return one_graph_case(d, config.graph)
    # invalid when the drawn k is among the last ``bad`` of ``slots``: k shrinks to 0, valid
    slots, bad = _slots(config.invalid_share)
    invalid = bad > 0 and d.integer(0, slots - 1) >= slots - bad
    graph, expect = build_graph(d, max_nodes=config.max_nodes, max_dim=config.max_dim), PASS
    if invalid:
        invariant, edit = edit_of(graph)
        graph, expect = break_graph(d, graph, invariant, edit), reject(invariant)
    return graph, expect, d.integer(0, 2**16)


@functools.lru_cache(maxsize=16)
def _slots(invalid_share: float) -> tuple[int, int]:
    """(slots, bad): ``invalid_share`` as the fraction bad / slots, to within 1/100
    (made once per share: the ``Fraction`` was 5% of drawing a case)."""
    share = Fraction(invalid_share).limit_denominator(100)
    return share.denominator, share.numerator


def edit_of(graph: Graph) -> tuple[str, int]:
    """(invariant, edit number) for an invalid case built on ``graph``: from
    a hash of its document, the same in every process and run."""
    doc = json.dumps(graph_to_doc(graph), sort_keys=True).encode()
    h = int.from_bytes(hashlib.blake2b(doc, digest_size=8).digest(), "little")
    invariant = REJECTABLE[h % len(REJECTABLE)]
    return invariant, (h // len(REJECTABLE)) % edit_count(invariant)


def one_graph_cases(graph: Graph) -> st.SearchStrategy[Case3]:
    """``one_graph_case`` as a Hypothesis strategy."""

    @st.composite
    def case(draw: st.DrawFn) -> Case3:
        return one_graph_case(HypothesisDraws(draw), graph)

    return case()


def one_graph_case(d: Draws, graph: Graph) -> Case3:
    """(graph, pass, schedule seed) for a campaign over one given, valid graph.
    Half of the cases (shrinking to none) redraw the seed of every placeholder and
    owned variable whose value is seeded, as the generator draws seeds; an int32
    one keeps its [low, high). Constants and explicit values are the graph's:
    they are fixed. A redraw of int32 values the reference cannot run (an id
    beyond its table: the graph's [low, high) is wider than the table, and its
    own seed happened to draw ids within it) is no case of the graph, whose
    own values it then keeps: it would be a finding against a correct compiler."""
    seeded = [s.name for s in graph.storage if s.kind is not StorageKind.CONSTANT and s.init is not None and s.init.seed is not None]
    g = graph
    if seeded and d.boolean():
        seeds = {name: d.integer(0, MAX_SEED) for name in seeded}
        storage = tuple(replace(s, init=replace(s.init, seed=seeds[s.name])) if s.name in seeds else s for s in graph.storage)
        g = replace(graph, storage=storage)
        if any(s.dtype is Dtype.INT32 for s in graph.storage if s.name in seeds) and not _reference_runs(g):
            g = graph
    return g, PASS, d.integer(0, 2**16)


def _reference_runs(graph: Graph) -> bool:
    """Whether the reference runs ``graph`` twice, as the oracle does, without
    an error the values cause."""
    try:
        run_reference(graph, runs=2)
    except ExecutionError:
        return False
    return True


def input_seeds(graph: Graph, given: Graph) -> tuple[tuple[str, Init], ...] | None:
    """``graph`` as ``given`` with input overrides (``Case.inputs``): the
    initial values of the storages whose seeds ``one_graph_case`` redrew;
    ``None`` when ``graph`` is not ``given`` with other seeds only (a graph
    the reducer changed, say)."""
    if graph is given:
        return ()
    if graph.name != given.name or graph.nodes != given.nodes or len(graph.storage) != len(given.storage):
        return None
    out = []
    for s, t in zip(given.storage, graph.storage):
        if s == t:
            continue
        if s.kind is StorageKind.CONSTANT or s.init is None or t.init is None or replace(t, init=replace(t.init, seed=s.init.seed)) != s:
            return None
        out.append((t.name, t.init))
    return tuple(out)
