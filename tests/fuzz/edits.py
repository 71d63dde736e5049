"""Every invalid-graph edit (``fuzz.strategies.invalid``), for tests that hold a
checker to the verifier on each: ``EDITS`` to parametrize over, ``edited`` the
graphs one edit makes of small generated graphs."""

from __future__ import annotations

from hypothesis import strategies as st

from refcompiler.graph import Graph

from fuzz.strategies import REJECTABLE, graphs
from fuzz.strategies.invalid import broken, edit_count

EDITS = [(invariant, k) for invariant in REJECTABLE for k in range(edit_count(invariant))]


def edited(invariant: str, edit: int, max_nodes: int = 5) -> st.SearchStrategy[Graph]:
    """Graphs of at most ``max_nodes`` nodes with edit ``edit`` of ``invariant`` applied."""
    return graphs(max_nodes=max_nodes).flatmap(lambda g: broken(g, invariant, edit))
