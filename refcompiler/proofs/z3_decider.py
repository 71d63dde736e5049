"""SCH-2 by Z3: the symbolic decider (DESIGN §4, §7.2).

Encoding: an integer position ``pos[n]`` per node and ``pos[u] < pos[v]`` per
dependency edge; a model is a legal schedule (sort the nodes by position).
One solver holds these constraints; each conflicting pair is one incremental
query under an assumption, never a fresh solver:

1. check the edges alone; the model is a base schedule, in which the pair
   ``(a, b)`` comes in some order, say ``a`` first;
2. ask for a model with the pair flipped (assumption ``pos[b] < pos[a]``).
   ``unsat``: every legal schedule runs ``a`` first, the pair is ordered.
   ``sat``: the model and the base schedule order the pair oppositely, a
   counterexample read straight off the two models.
   ``unknown`` (timeout): the pair is undecided, and the proof inconclusive.

The query is decided by Z3 alone; no reachability computed here feeds it, so
the decider is independent of ``reach``.

Z3's difference-logic solver does not poll its time limit: one check of a
problem of tens of thousands of nodes ran 40 s past a 10 s deadline. A
problem of ``CHILD_NODES`` nodes or more is therefore decided in a child
process, which is stopped at the deadline (and a moment's grace for Z3's own
``unknown``); its pairs are then undecided.
"""

from __future__ import annotations

import gc
import multiprocessing
import time

from refcompiler.errors import InternalError
from refcompiler.proofs import smt
from refcompiler.proofs.conflicts import Decision, Order, Pair, Problem
from refcompiler.proofs.witness import schedule_from_positions

__all__ = ["ENGINE", "decide"]

ENGINE = "z3"

CHILD_NODES = 5_000  # nodes from which a decision with a deadline runs in a child process
GRACE = 1.0  # seconds past the deadline the child has to return Z3's own unknowns


def decide(problem: Problem, *, deadline: float | None = None) -> Decision:
    """Decide every pair of ``problem`` with Z3 within ``deadline``
    (``time.monotonic()``); pairs left when it passes are ``UNKNOWN``."""
    in_child = (deadline is not None and problem.deps.number_of_nodes() >= CHILD_NODES
                and "fork" in multiprocessing.get_all_start_methods()
                and not multiprocessing.current_process().daemon)  # (a daemonic process may not start one)
    if not in_child:
        return _decide(problem, deadline)
    return _decide_in_child(problem, deadline)


def _decide_in_child(problem: Problem, deadline: float) -> Decision:
    """``_decide`` in a forked child, stopped if it is not done by ``deadline`` + ``GRACE``."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(problem, deadline, sender), daemon=True)
    gc.freeze()  # the child's collector leaves the parent's objects alone: no copy of every page it touches
    try:
        child.start()
    finally:
        gc.unfreeze()
    sender.close()
    try:
        if receiver.poll(max(0.0, deadline - time.monotonic()) + GRACE):
            try:
                found = receiver.recv()
            except EOFError:  # it died without a word (its memory, a signal)
                found = None
            if isinstance(found, BaseException):
                raise found
            if isinstance(found, Decision):
                return found
            child.join(5)
            why = f"the Z3 process ended with exit code {child.exitcode} before it decided"
        else:
            why = "Z3 ran past the time limit and was stopped"
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receiver.close()
    return Decision(ENGINE, {p: Order.UNKNOWN for p in problem.pairs}, detail=why)


def _child(problem: Problem, deadline: float, sender: object) -> None:
    try:
        result: object = _decide(problem, deadline)
    except BaseException as e:  # handed to the parent, which raises it as its own
        result = e
    sender.send(result)  # type: ignore[attr-defined]


def _decide(problem: Problem, deadline: float | None) -> Decision:
    pairs = problem.pairs
    s = smt.difference_solver()
    pos = smt.int_vars(problem.deps.nodes, prefix="pos.")
    for u, v in problem.deps.edges:
        s.add(pos[u] < pos[v])
    base = smt.check(s, deadline=deadline)
    if base is smt.SatResult.UNSAT:
        # prepare() only hands over acyclic graphs: a bug in the suite itself
        raise InternalError(f"Z3 finds no schedule at all for '{problem.graph.name}', whose dependency graph is acyclic")
    if base is smt.SatResult.UNKNOWN:
        return Decision(ENGINE, {p: Order.UNKNOWN for p in pairs}, detail="Z3 could not find any schedule in time")
    base_pos = smt.int_model(s, pos) if pairs else {}
    orders: dict[Pair, Order] = {}
    witness = None
    for pair in pairs:
        order, models = _decide_pair(s, pos, base_pos, pair, deadline, want_models=witness is None)
        orders[pair] = order
        if order is Order.UNORDERED and witness is None:
            witness = (schedule_from_positions(problem, models[0]), schedule_from_positions(problem, models[1]))
    unknown = sum(o is Order.UNKNOWN for o in orders.values())
    detail = f"Z3 returned unknown (timeout) on {unknown} of {len(pairs)} pairs" if unknown else ""
    return Decision(ENGINE, orders, witness, detail)


def _decide_pair(
    s: object,
    pos: dict[str, smt.Expr],
    base: dict[str, int],
    pair: Pair,
    deadline: float | None,
    *,
    want_models: bool,
) -> tuple[Order, tuple[dict[str, int], dict[str, int]]]:
    """The order of ``pair``; when it is unordered and ``want_models``, also the
    positions of a model with ``a`` first and of one with ``b`` first.

    Reading a model costs time linear in the nodes, so it is done only for the
    witness. A base model that puts ``a`` and ``b`` at one position already shows
    they are unordered (a path between them would force distinct positions).
    """
    a, b = pair
    models: dict[str, dict[str, int]] = {}
    if base[a] < base[b]:
        models["a"] = base
    elif base[b] < base[a]:
        models["b"] = base
    elif not want_models:
        return Order.UNORDERED, ({}, {})
    for first, second, key in ((a, b, "a"), (b, a, "b")):
        if key in models:
            continue
        answer = smt.check(s, pos[first] < pos[second], deadline=deadline)
        if answer is smt.SatResult.UNKNOWN:
            return Order.UNKNOWN, ({}, {})
        if answer is smt.SatResult.UNSAT:
            return (Order.B_FIRST if key == "a" else Order.A_FIRST), ({}, {})
        models[key] = smt.int_model(s, pos) if want_models else {}
    return Order.UNORDERED, (models["a"], models["b"])
