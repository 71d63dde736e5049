"""A user's randomised scheduler for the campaign tests, with its fixed twin.

``schedule`` is a seeded random Kahn order that, on one pick in fifty, takes
a wrong branch: it picks among the nodes whose *data* inputs are done,
forgetting the memory edges (a save may then run before a reader of the
placeholder it overwrites). ``fixed`` is the same scheduler without that
branch. Not part of refc: loaded as ``flaky_scheduler:schedule`` with this
directory on ``PYTHONPATH``.
"""

from __future__ import annotations

import random

WRONG_ONE_IN = 50


def _order(graph, deps, seed, wrong_one_in):
    rng = random.Random(seed)
    creation = {n.name: i for i, n in enumerate(graph.nodes)}
    done: set[str] = set()
    order: list[str] = []
    pending = sorted(deps.nodes, key=lambda n: creation.get(n, len(creation)))
    while pending:
        ready = [n for n in pending if all(p in done for p in deps.predecessors(n))]
        if wrong_one_in and rng.randrange(wrong_one_in) == 0:
            data_ready = [n for n in pending
                          if all(p in done for p in deps.predecessors(n) if deps.edges[p, n]["kind"] == "data")]
            ready = data_ready or ready
        name = ready[rng.randrange(len(ready))]
        pending.remove(name)
        done.add(name)
        order.append(name)
    return order


def schedule(graph, deps, seed=0):
    return _order(graph, deps, seed, WRONG_ONE_IN)


def fixed(graph, deps, seed=0):
    return _order(graph, deps, seed, 0)
