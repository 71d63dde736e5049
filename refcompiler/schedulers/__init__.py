"""Schedulers (DESIGN §4-5): each maps a graph to a legal order of its nodes.

A scheduler is any callable ``scheduler(graph, deps, seed) -> node names in
order``, where ``deps`` is ``refcompiler.deps.dependency_graph(graph)`` and
``seed`` feeds a randomised one (the others ignore it). The built-ins are
``topo`` (deterministic Kahn), ``memory`` (frees the most bytes first) and
``random`` (a seeded uniform choice among the ready nodes). A user's scheduler
plugs in as ``module:attribute`` with the same protocol; the driver checks
every scheduler's output against SCH-1, so a wrong one is caught, not trusted.
"""

from __future__ import annotations

import collections.abc
import contextlib
import dataclasses
import pickle
from typing import Callable, Iterator, Sequence

import networkx as nx

from refcompiler.deps import NAMES_LISTED
from refcompiler.errors import InvariantViolation, UsageError
from refcompiler.graph import Graph
from refcompiler.limits import shown
from refcompiler.plugins import load_attribute, qualified_name, untrusted_calls
from refcompiler.schedulers.kahn import kahn
from refcompiler.schedulers.memory import memory_schedule
from refcompiler.schedulers.random import random_schedule
from refcompiler.schedulers.topo import topo_schedule

__all__ = ["Scheduler", "SCHEDULERS", "resolve_scheduler", "blamed_as", "run_scheduler", "scheduler_calls", "order_names", "kahn"]

Scheduler = Callable[[Graph, nx.DiGraph, int], Sequence[str]]

SCHEDULERS: dict[str, Scheduler] = {
    "topo": topo_schedule,
    "memory": memory_schedule,
    "random": random_schedule,
}


def resolve_scheduler(spec: str) -> Scheduler:
    """A built-in scheduler by name, or a user's as ``module:attribute``.

    Raises ``UsageError`` naming the known schedulers when ``spec`` resolves to
    nothing callable.
    """
    if spec in SCHEDULERS:
        return SCHEDULERS[spec]
    known = ", ".join(SCHEDULERS)
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise UsageError(f"unknown scheduler {spec!r} (known: {known}; or module:attribute for your own)")
    scheduler = load_attribute(spec, "scheduler")
    if not callable(scheduler):
        raise UsageError(f"scheduler {spec!r} is not callable (a scheduler is f(graph, deps, seed) -> node names)")
    return scheduler  # type: ignore[return-value]


def blamed_as(scheduler: str | Scheduler) -> str:
    """The component a finding against ``scheduler`` blames (``Signature.blame``):
    ``scheduler`` for refc's own, whose faults are in refc's dependency model
    or a mutant; a user's by its function's ``module:qualname``
    (``my_sched:schedule``), as a user's pass is by its name, so that the
    finding says whose order it was and two users' schedulers are two bugs."""
    pick = resolve_scheduler(scheduler) if isinstance(scheduler, str) else scheduler
    if pick in SCHEDULERS.values():
        return "scheduler"
    return qualified_name(pick, ":")


def run_scheduler(scheduler: str | Scheduler, graph: Graph, deps: nx.DiGraph, seed: int) -> object:
    """What the scheduler returns, unchecked (``order_names`` checks its form,
    ``refcompiler.deps.check_schedule`` its legality); the built-ins are
    trusted to raise only refc errors, a user's is untrusted
    (``refcompiler.plugins.call_untrusted``)."""
    with scheduler_calls(scheduler) as run:
        return run(graph, deps, seed)


@contextlib.contextmanager
def scheduler_calls(scheduler: str | Scheduler) -> Iterator[Callable[[Graph, nx.DiGraph, int], object]]:
    """A block that asks ``scheduler`` for many orders: ``run(graph, deps,
    seed)`` is ``run_scheduler(scheduler, graph, deps, seed)``, a user's
    scheduler guarded once for the block (``untrusted_calls``)."""
    pick = resolve_scheduler(scheduler) if isinstance(scheduler, str) else scheduler
    if pick in SCHEDULERS.values():
        yield pick
        return
    name = blamed_as(pick)
    with untrusted_calls(f"the scheduler {name}", blame=name) as call:
        # copies: the order is checked against ``deps`` and compiled from ``graph``,
        # which a user's code must not edit (the graph's nodes and storage are
        # frozen; what it can change is the graph object and its cached tables)
        copies = _Copies()
        yield lambda graph, deps, seed: call(pick, dataclasses.replace(graph), copies.of(deps), seed)


class _Copies:
    """Fresh copies of one dependency graph for many calls: unpickled from
    bytes made once (~20 us for a small graph, where ``DiGraph.copy`` takes
    ~70 us: a deterministic scheduler was asked hundreds of times a graph)."""

    def __init__(self) -> None:
        self.deps: nx.DiGraph | None = None
        self.data = b""

    def of(self, deps: nx.DiGraph) -> nx.DiGraph:
        if deps is not self.deps:
            self.deps, self.data = deps, pickle.dumps(deps, protocol=pickle.HIGHEST_PROTOCOL)
        return pickle.loads(self.data)  # bytes this process made, of its own object


def order_names(order: object, nodes: int | None = None) -> tuple[str, ...]:
    """A schedule as a tuple of node names; SCH-1 if it is not a list or tuple
    of strings, or (``nodes``: how many the graph has) lists more than twice
    that, found before its names are looked at (a user's scheduler may
    return millions). A few names too many are left to
    ``refcompiler.deps.check_schedule``, which names the ones repeated or
    unknown (here they were only counted: "lists 5 names; the graph has 4")."""
    if isinstance(order, collections.abc.Iterator):  # its repr says only where it lives in memory, which no two runs share
        raise InvariantViolation("SCH-1", f"a schedule is a list of node names; got a {type(order).__name__}, an iterator (return list(...) of it)")
    if not isinstance(order, (list, tuple)):
        raise InvariantViolation("SCH-1", f"a schedule is a list of node names; got {type(order).__name__} {_shown(order)}")
    if nodes is not None and len(order) > 2 * nodes + NAMES_LISTED:
        raise InvariantViolation("SCH-1", f"the schedule lists {len(order)} names; the graph has {nodes} nodes")
    bad = [x for x in order if not isinstance(x, str)]
    if bad:
        raise InvariantViolation("SCH-1", f"a schedule lists node names; got {type(bad[0]).__name__} {_shown(bad[0])}")
    # plain strings: a subclass of str (numpy.str_, or a user's with its own
    # hash or equality) is copied, so that what is checked is what is compiled
    return tuple(str.__str__(x) for x in order)


def _shown(value: object) -> str:
    """A user's value for a one-line message; its ``repr`` may raise or span lines."""
    try:
        return shown(value, 80).replace("\n", " ")
    except Exception:
        return "(which cannot be shown)"
