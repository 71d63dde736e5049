"""SCH-2 by reachability: the fast graph decider (DESIGN §4, §7.2).

A pair ``(a, b)`` is ordered iff ``a`` reaches ``b`` or ``b`` reaches ``a`` in
the dependency graph. One pass in reverse topological order computes, for
every node, the set of *conflicting* nodes it reaches as a bitset (a Python
int); bits are given only to nodes that occur in a conflict, so the sets stay
small. Cost: one big-int OR per edge, O(E * K / 64) word operations for K
conflicting nodes: near-linear in practice (10,000 nodes in well under a
second).

The witness for the first unordered pair is built from the graph
(``witness.witness_schedules``), not from the bitsets, so it is an independent
cross-check: ``prove`` checks it against SCH-1.
"""

from __future__ import annotations

import networkx as nx

from refcompiler.proofs.conflicts import Decision, Order, Pair, Problem
from refcompiler.proofs.witness import ancestors_first

__all__ = ["ENGINE", "decide", "reach_sets"]

ENGINE = "reach"


def reach_sets(deps: nx.DiGraph, targets: list[str]) -> tuple[dict[str, int], dict[str, int]]:
    """``(bit, reaches)``: ``bit[t]`` is the bit of each target; ``reaches[n]`` has
    the bit of every target that ``n`` reaches by a non-empty path."""
    bit = {t: 1 << i for i, t in enumerate(targets)}
    reaches: dict[str, int] = {}
    for n in reversed(list(nx.topological_sort(deps))):
        acc = 0
        for s in deps.successors(n):
            acc |= reaches[s] | bit.get(s, 0)
        reaches[n] = acc
    return bit, reaches


def order_of(pair: Pair, bit: dict[str, int], reaches: dict[str, int]) -> Order:
    a, b = pair
    if reaches[a] & bit[b]:
        return Order.A_FIRST
    if reaches[b] & bit[a]:
        return Order.B_FIRST
    return Order.UNORDERED


def decide(problem: Problem, *, deadline: float | None = None) -> Decision:
    """Decide every pair of ``problem`` by reachability (``deadline`` is not
    needed: the decider is complete and fast)."""
    pairs = problem.pairs
    targets = list(dict.fromkeys(n for p in pairs for n in p))
    bit, reaches = reach_sets(problem.deps, targets)
    orders = {p: order_of(p, bit, reaches) for p in pairs}
    witness = None
    first = next((p for p in pairs if orders[p] is Order.UNORDERED), None)
    if first is not None:
        a, b = first
        witness = (ancestors_first(problem, a), ancestors_first(problem, b))
    return Decision(ENGINE, orders, witness)
