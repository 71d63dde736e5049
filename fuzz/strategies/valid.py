"""``graphs()``: valid graphs by construction, drawn one move at a time with
swarm testing (see ``fuzz.strategies``)."""

from __future__ import annotations

import random
from typing import Callable, Iterable

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from specs import OPS, OpKind

from refcompiler.graph import Graph

from fuzz.strategies.builder import MAX_DIM, Builder, Feature, NoOperand
from fuzz.strategies.draws import Draws, HypothesisDraws
from fuzz.strategies.patterns import build_chain, build_diamond, build_outputs, build_twins
from fuzz.strategies.recipes import BUILDERS

__all__ = ["graphs", "build_graph"]


def graphs(
    *,
    ops: Iterable[OpKind] | None = None,
    features: Iterable[Feature] | None = None,
    min_nodes: int = 1,
    max_nodes: int = 10,
    swarm: bool = True,
    max_dim: int = MAX_DIM,
) -> st.SearchStrategy[Graph]:
    """Valid graphs (the verifier accepts every one).

    ``ops`` / ``features``: the universe a swarm example draws its subset from
    (default: every op of the spec table, every ``Feature``); with
    ``swarm=False`` every example enables all of them. The graph has between
    ``min_nodes`` and ``max_nodes`` nodes (saves included), tensors of at
    most ``max_dim`` (at least 2) along each axis.
    """
    universe = tuple(OPS) if ops is None else tuple(dict.fromkeys(ops))
    feats = tuple(Feature) if features is None else tuple(dict.fromkeys(features))
    for k in universe:
        if not isinstance(k, OpKind):
            raise InvalidArgument(f"ops must be OpKind members, got {k!r}")
    for f in feats:
        if not isinstance(f, Feature):
            raise InvalidArgument(f"features must be Feature members, got {f!r}")
    if not universe:
        raise InvalidArgument("ops must name at least one op")
    if not 1 <= min_nodes <= max_nodes:
        raise InvalidArgument(f"need 1 <= min_nodes <= max_nodes, got min_nodes={min_nodes}, max_nodes={max_nodes}")
    if not 2 <= max_dim:
        raise InvalidArgument(f"need max_dim >= 2, got {max_dim}")
    return _graphs(universe, feats, min_nodes, max_nodes, swarm, max_dim)


# Swarm: one draw, the seed of the subset to disable (0, where shrinking
# goes, disables nothing). Each op and feature is dropped half the time, the
# patterns that build hazards (diamonds, chains, placeholders read and saved, twins)
# a quarter of the time. One draw instead of one per op and feature: those
# were 32 of a default example's 72 draws, and a draw is where Hypothesis
# spends its time.
_SWARM = 2**32 - 1  # the largest key
_DROP = 0.5
_DROP_PATTERN = 0.25

_PATTERNS = frozenset({Feature.DIAMOND, Feature.CHAIN, Feature.READ_SAVE, Feature.TWINS})

# Whether the graph's fresh float32 storage takes values with ties and signed
# zeros (``builder.TIES``) rather than standard-normal ones: one graph in eight,
# shrinking to no. Drawn once, before any move, so that shrinking moves keeps it.
_TIES = (False,) * 7 + (True,)

# Continue-or-stop flag of the move loop: stop is index 0, so shrinking stops early.
_MORE = (False,) + (True,) * 7


def _swarm(key: int, universe: tuple[OpKind, ...], feats: tuple[Feature, ...]) -> tuple[list[OpKind], frozenset[Feature]]:
    """The enabled ops (all of ``universe`` when every one is dropped) and
    features: each dropped with its probability, in a sequence fixed by
    ``key`` (the ops in order, then the features); nothing is dropped for key 0."""
    if key == 0:
        return list(universe), frozenset(feats)
    r = random.Random(key).random
    enabled = [k for k in universe if not r() < _DROP] or list(universe)
    return enabled, frozenset(f for f in feats if not r() < (_DROP_PATTERN if f in _PATTERNS else _DROP))


@st.composite
def _graphs(draw: Callable, universe: tuple[OpKind, ...], feats: tuple[Feature, ...], min_nodes: int, max_nodes: int, swarm: bool,
            max_dim: int) -> Graph:
    return build_graph(HypothesisDraws(draw), universe, feats, min_nodes, max_nodes, swarm, max_dim)


def build_graph(d: Draws, universe: tuple[OpKind, ...] = tuple(OPS), feats: tuple[Feature, ...] = tuple(Feature),
                min_nodes: int = 1, max_nodes: int = 10, swarm: bool = True, max_dim: int = MAX_DIM) -> Graph:
    """The graph ``graphs()`` draws, its choices made by ``d`` (arguments as
    ``graphs`` checks them; the defaults are its own)."""
    # Swarm: shrinking (towards seed 0) enables everything and then picks the table's first ops.
    enabled, features = _swarm(d.integer(0, _SWARM) if swarm else 0, universe, feats)
    b = Builder(d, features, max_nodes, max_dim, ties=d.choice(_TIES))
    # a diamond or a chain counts as three moves' worth of choice: it is three
    # nodes of structure; twins one (a small share: they are one hazard, CSE's)
    moves: list[OpKind | Feature] = list(enabled)
    for pattern in (Feature.DIAMOND, Feature.CHAIN):
        if pattern in features:
            moves += [pattern] * 3
    if Feature.TWINS in features:
        moves.append(Feature.TWINS)
    # The final step saves unused results (what is not saved is dead code, which
    # graph DCE removes before any pass could get it wrong); leave it room.
    outputs = OpKind.SAVE in universe
    move_cap = max(min_nodes, max_nodes - 2) if outputs else max_nodes
    attempts = 0
    while len(b.nodes) < move_cap and attempts < 4 * max_nodes:
        attempts += 1
        # drawn before every move, the first included, so that shrinking can
        # delete any move the same way (the flag is ignored below min_nodes)
        if not d.choice(_MORE) and len(b.nodes) >= min_nodes:
            break
        kind = d.choice(moves)
        try:
            if kind is Feature.DIAMOND:
                build_diamond(b, enabled)
            elif kind is Feature.CHAIN:
                build_chain(b, enabled)
            elif kind is Feature.TWINS:
                build_twins(b, enabled)
            else:
                BUILDERS[kind](b, kind)  # type: ignore[index]
        except NoOperand:
            continue
    if outputs:
        build_outputs(b)
    while len(b.nodes) < min_nodes:  # only when every move found no operand
        BUILDERS[OpKind.NEG](b, OpKind.NEG)
    return b.graph("fuzz")
