"""SCH-2 by enumeration: the third oracle, for graphs small enough (DESIGN §8).

``all_legal_orders`` lists every topological order of the dependency graph
(``legal_orders_of``: Knuth and Szwarcfiter's enumeration, in the sequence
``networkx.all_topological_sorts`` gives); ``decide`` looks at every one of them
and calls a pair ordered iff all of them put it the same way round. It shares
no reasoning with ``reach`` or ``z3``, which is why the tests use it to check
them; it is exponential, so it takes a ``limit`` and says ``UNKNOWN`` for the
pairs it could not settle within it.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Iterator

import networkx as nx

from refcompiler.errors import UsageError
from refcompiler.graph import Graph
from refcompiler.proofs.conflicts import Decision, Order, Pair, Problem, legal_dependency_graph

__all__ = ["ENGINE", "DEFAULT_LIMIT", "all_legal_orders", "legal_orders_of", "decide"]

ENGINE = "enumerate"
DEFAULT_LIMIT = 100_000


def all_legal_orders(graph: Graph, *, limit: int | None = None) -> Iterator[tuple[str, ...]]:
    """Every legal order of ``graph`` (every topological order of
    ``deps.dependency_graph(graph)``), at most ``limit`` of them.

    Works on the graph as given: raises SCH-1 (or G-1) if its dependency graph
    has a cycle (call ``deps.break_save_cycles`` first, as the compiler does).
    Raises ``UsageError`` for a negative ``limit``. The order of the sequence
    is networkx's and deterministic.
    """
    if limit is not None and limit < 0:
        raise UsageError(f"limit must be 0 or more, got {limit}")
    return legal_orders_of(legal_dependency_graph(graph), limit=limit)


def legal_orders_of(deps: nx.DiGraph, *, limit: int | None = None) -> Iterator[tuple[str, ...]]:
    """Every topological order of the acyclic ``deps``, at most ``limit``, in
    the sequence ``networkx.all_topological_sorts`` gives them (so which order
    a campaign checks first does not depend on who enumerates), on plain lists
    of node numbers: networkx's own costs a graph view per step, 4% of a
    campaign. ``networkx.NetworkXUnfeasible`` if ``deps`` has a cycle.

    Knuth and Szwarcfiter's method: ``ready`` holds the nodes whose
    predecessors are all placed; a step places the rightmost one and appends
    the successors it frees. Going back, a level's node is put back at the
    left of ``ready`` (a rotation), and the level is done once the node it
    first placed is rightmost again."""
    if limit is not None and limit <= 0:
        return
    names = list(deps)
    number = {n: i for i, n in enumerate(names)}
    after = [[number[b] for b in deps.succ[n]] for n in names]
    waiting = [0] * len(names)  # predecessors not yet placed
    for successors in after:
        for b in successors:
            waiting[b] += 1
    ready = deque(i for i in range(len(names)) if waiting[i] == 0)
    placed: list[int] = []
    firsts: list[int] = []  # the node each level placed first
    count = 0
    while True:
        if len(placed) == len(names):
            yield tuple(names[i] for i in placed)
            count += 1
            if limit is not None and count >= limit:
                return
            while placed:  # back to the deepest level with a node left to try
                node = placed.pop()
                for b in after[node]:
                    waiting[b] += 1
                while ready and waiting[ready[-1]] > 0:
                    ready.pop()
                ready.appendleft(node)
                if ready[-1] != firsts[-1]:
                    break
                firsts.pop()
        else:
            if not ready:
                raise nx.NetworkXUnfeasible("the dependency graph has a cycle")
            node = ready.pop()
            for b in after[node]:
                waiting[b] -= 1
                if waiting[b] == 0:
                    ready.append(b)
            placed.append(node)
            if len(firsts) < len(placed):
                firsts.append(node)
        if not firsts:
            return


def decide(problem: Problem, *, deadline: float | None = None, limit: int | None = DEFAULT_LIMIT) -> Decision:
    """Decide every pair by looking at up to ``limit`` legal orders (before
    ``deadline``). A pair seen both ways round is unordered, whatever the limit;
    a pair seen one way only is ordered if every order was seen, else ``UNKNOWN``."""
    pairs = problem.pairs
    seen: dict[Pair, set[bool]] = {p: set() for p in pairs}
    witness_orders: dict[Pair, dict[bool, tuple[str, ...]]] = {p: {} for p in pairs}
    complete = True
    count = 0
    for order in legal_orders_of(problem.deps):
        if (limit is not None and count >= limit) or (deadline is not None and time.monotonic() > deadline):
            complete = False
            break
        count += 1
        position = {n: i for i, n in enumerate(order)}
        for p in pairs:
            a_first = position[p[0]] < position[p[1]]
            seen[p].add(a_first)
            witness_orders[p].setdefault(a_first, order)
    orders: dict[Pair, Order] = {}
    for p in pairs:
        if len(seen[p]) == 2:
            orders[p] = Order.UNORDERED
        elif not complete:
            orders[p] = Order.UNKNOWN
        else:
            orders[p] = Order.A_FIRST if True in seen[p] else Order.B_FIRST
    first = next((p for p in pairs if orders[p] is Order.UNORDERED), None)
    witness = None if first is None else (witness_orders[first][True], witness_orders[first][False])
    detail = f"{count} legal order{'' if count == 1 else 's'}" + ("" if complete else f" looked at, stopped at the limit of {limit}")
    return Decision(ENGINE, orders, witness, detail, legal_orders=count if complete else None)
