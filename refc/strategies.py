"""Hypothesis strategies for your own tests: valid graphs, graphs that break
exactly one invariant, and schedules of a graph.

The graphs are ``refcompiler.graph.Graph`` values (an ``ExampleGraph``
subclass that compares equal to the plain one) whose ``repr`` is the graph's
``refc-graph/1`` JSON document, so a falsifying example Hypothesis prints can
be saved as a file and run with ``refc check``/``refc run``/``refc show``.
Sizes default small (at most 6 nodes) so that a test calling ``refc.check``
on each example stays within Hypothesis's default settings, deadline
included; ``max_nodes`` raises it.

    from hypothesis import given
    import refc
    from refc.strategies import graphs

    @given(graphs())
    def test_my_pipeline(graph):
        assert refc.check(graph, pipeline="my_passes:PIPELINE") is None
"""

from __future__ import annotations

import json
from typing import Iterable, Sequence

from hypothesis import strategies as st

from specs import OpKind

from fuzz.schedules import ScheduleChoice, ScheduleSource
from refcompiler.driver import scheduled_graph
from fuzz.schedules import schedules as _schedules
from fuzz.strategies import Feature
from fuzz.strategies.builder import MAX_DIM
from fuzz.strategies import graphs as _graphs
from fuzz.strategies import invalid_graphs as _invalid_graphs
from refcompiler.graph import Graph
from refcompiler.graph_json import graph_to_doc

__all__ = ["graphs", "invalid_graphs", "schedules", "ExampleGraph", "Feature", "ScheduleSource", "ScheduleChoice", "DEFAULT_MAX_NODES"]

DEFAULT_MAX_NODES = 6


class ExampleGraph(Graph):
    """A ``Graph`` that prints as its ``refc-graph/1`` JSON document."""

    def __repr__(self) -> str:
        return json.dumps(graph_to_doc(self))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Graph):
            return (self.name, self.storage, self.nodes) == (other.name, other.storage, other.nodes)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.name, self.storage, self.nodes))


def example(graph: Graph) -> ExampleGraph:
    """``graph`` as an ``ExampleGraph`` (the same fields)."""
    return ExampleGraph(name=graph.name, storage=graph.storage, nodes=graph.nodes, meta=graph.meta)


def graphs(
    *,
    ops: Iterable[OpKind] | None = None,
    features: Iterable[Feature] | None = None,
    min_nodes: int = 1,
    max_nodes: int = DEFAULT_MAX_NODES,
    swarm: bool = True,
    max_dim: int = MAX_DIM,
) -> st.SearchStrategy[ExampleGraph]:
    """Valid graphs (the verifier accepts every one) with owned variables,
    placeholders read and saved, in-place candidates, views, several results.
    ``ops``/``features``: what a swarm example draws its subset from (default
    all); ``swarm=False`` enables all in every example. ``max_dim``: the
    largest size drawn for an axis (``refc fuzz --max-dim``). Arguments are
    checked when the strategy is built."""
    return _graphs(ops=ops, features=features, min_nodes=min_nodes, max_nodes=max_nodes, swarm=swarm, max_dim=max_dim).map(example)


def invalid_graphs(invariant: str) -> st.SearchStrategy[ExampleGraph]:
    """Graphs that break exactly ``invariant`` (one of ``G-1``, ``OWN-1`` ..
    ``OWN-4``): the verifier must reject each with that id."""
    return _invalid_graphs(invariant).map(example)


def schedules(graph: Graph, *, sources: Sequence[ScheduleSource] = tuple(ScheduleSource)) -> st.SearchStrategy[ScheduleChoice]:
    """Schedule choices for ``graph`` (the schedulers', random legal orders,
    adversarial ones, SCH-2 witnesses, all orders of a small graph); pass one
    to ``refc.check(graph, choice)``."""
    return _schedules(scheduled_graph(graph), sources=sources)
