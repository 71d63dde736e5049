"""A user's scheduler that keeps state between calls, for the campaign tests.

``schedule`` memoises its order by the graph's name, to save time when one
model is compiled again: every generated graph has one name, so each graph
after the first gets the first one's order. In the campaign's process that
fails on any graph, the empty one included; in a fresh process, as ``refc
replay`` runs it, the stored case passes. Not part of refc: loaded as
``memo_scheduler:schedule`` with this directory on ``PYTHONPATH``.
"""

from __future__ import annotations

from refcompiler.schedulers.topo import topo_schedule

_BY_NAME: dict[str, list[str]] = {}


def schedule(graph, deps, seed=0):
    if graph.name not in _BY_NAME:
        _BY_NAME[graph.name] = list(topo_schedule(graph, deps, seed))
    return list(_BY_NAME[graph.name])
