"""Schedules to compile a graph with (DESIGN §8): the schedulers' own, seeded
random legal orders, adversarial ones, pair witnesses (two legal orders of the
dependency model that put a conflicting pair both ways), and every legal
order when a graph has few enough.

Legality is that of the dependency model *in the caller's context*: under a
mutant (``refcompiler.mutants.activate``) the orders follow the mutant's
model, which is exactly how a wrong model shows up. The oracle checks every
schedule the compiler accepts against the correct model (SCH-1).

Orders are over ``refcompiler.driver.scheduled_graph(graph)``: the graph the compiler schedules,
after dead-code elimination and after save cycles are broken (DESIGN §4-5).
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass
from typing import Callable, Sequence

import networkx as nx
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from refcompiler.deps import check_schedule, dependency_graph, is_acyclic
from refcompiler.errors import InvariantViolation, RefCompilerError
from refcompiler.effects import conflict_storage, node_effects
from refcompiler.graph import Graph
from refcompiler.schedulers import order_names, resolve_scheduler, scheduler_calls
from refcompiler.schedulers.kahn import kahn
from refcompiler.proofs import adversarial_schedule, all_legal_orders, witness_schedules
from refcompiler.proofs.enumerate import legal_orders_of

from fuzz.time_limit import CaseTimeout

__all__ = [
    "ScheduleSource",
    "ScheduleChoice",
    "random_legal_order",
    "case_schedules",
    "scheduler_choices",
    "is_plugin",
    "PLUGIN_SEEDS",
    "PLUGIN_CALLS",
    "PLUGIN_PROBE",
    "PLUGIN_FULL_EVERY",
    "plugin_calls",
    "schedules",
    "EXHAUSTIVE_LIMIT",
]

# Graphs with at most this many legal orders are checked under every one of them.
EXHAUSTIVE_LIMIT = 24


class ScheduleSource(enum.Enum):
    SCHEDULER = "scheduler"  # the compiler's scheduler picks the order
    RANDOM = "random"  # a seeded uniformly random legal order
    ADVERSARIAL = "adversarial"  # writers as early, readers as late as legality allows
    WITNESS = "witness"  # a legal order per direction of a conflicting pair the model leaves unordered
    EXHAUSTIVE = "exhaustive"  # one of every legal order of a small graph
    GIVEN = "given"  # a case's own schedule, or one a caller passes


# A user's scheduler (``module:attribute``) is called with PLUGIN_CALLS distinct
# seeds per graph (a call costs far less than compiling and running an order), and
# each distinct order it gives is checked once, at most PLUGIN_SEEDS of them: a
# randomised scheduler must be exercised, and most seeds repeat an order. One that
# gives a single order for its first PLUGIN_PROBE seeds does not use the seed on that
# graph, and is asked no more, except on one case in PLUGIN_FULL_EVERY (drawn from
# the case's seed), where every call is made: a scheduler whose seed matters only
# rarely is still exercised, and a deterministic one no longer spends most of a
# campaign's time answering the same order 512 times (85% with a plain Kahn of its own).
PLUGIN_SEEDS = 48
PLUGIN_CALLS = 512
PLUGIN_PROBE = 32
PLUGIN_FULL_EVERY = 8


def is_plugin(spec: str | None) -> bool:
    """Whether a scheduler or pipeline spec names a user's code (``module:attribute``)."""
    return spec is not None and ":" in spec


@dataclass(frozen=True)
class ScheduleChoice:
    """One way to schedule a case: an explicit ``order`` of node names, or
    (``order is None``) the order the scheduler ``scheduler`` gives when called
    with ``seed`` (``None``: the case's seed)."""

    source: ScheduleSource
    order: tuple[str, ...] | None = None
    scheduler: str | None = None
    seed: int | None = None

    def describe(self) -> str:
        if self.order is None:
            seeded = "" if self.seed is None else f" with seed {self.seed}"
            return f"the {self.scheduler} scheduler's order{seeded}"
        return f"{self.source.value} order {', '.join(self.order)}"


def scheduler_choices(scheduler: str, seed: int, graph: Graph | None = None, deps: nx.DiGraph | None = None) -> list[ScheduleChoice]:
    """How a case calls ``scheduler``: once with the case's seed for a built-in
    one. A user's one: with ``PLUGIN_SEEDS`` distinct seeds derived from
    ``seed``; given the ``graph`` it schedules and its acyclic ``deps``, it is
    called with ``PLUGIN_CALLS`` seeds and one seed kept per distinct order
    (``_seeds_by_order``)."""
    if not is_plugin(scheduler):
        return [ScheduleChoice(ScheduleSource.SCHEDULER, None, scheduler)]
    if graph is None or deps is None:
        rng = random.Random(f"{scheduler}/{seed}")
        seeds = [seed] + rng.sample(range(1, 2**31), PLUGIN_SEEDS - 1)
    else:
        seeds = _seeds_by_order(scheduler, *plugin_calls(scheduler, seed), graph, deps)
    return [ScheduleChoice(ScheduleSource.SCHEDULER, None, scheduler, s) for s in seeds]


def plugin_calls(scheduler: str, seed: int) -> tuple[list[int], int | None]:
    """The seeds a user's ``scheduler`` is called with on a case of ``seed``
    (``PLUGIN_CALLS``, the case's own first) and after how many calls that all
    gave one order they end: ``PLUGIN_PROBE``, or ``None`` on one case in
    ``PLUGIN_FULL_EVERY``. Deterministic in ``scheduler`` and ``seed``."""
    rng = random.Random(f"{scheduler}/{seed}")
    called = [seed] + rng.sample(range(1, 2**31), PLUGIN_CALLS - 1)
    return called, None if rng.randrange(PLUGIN_FULL_EVERY) == 0 else PLUGIN_PROBE


def _seeds_by_order(spec: str, seeds: list[int], probe: int | None, graph: Graph, deps: nx.DiGraph) -> list[int]:
    """The first seed of each distinct order the user's scheduler ``spec``
    gives for ``graph``, at most ``PLUGIN_SEEDS``: those whose order the
    dependency model rejects first (where a scheduler is wrong; the compile
    stage then reports it), else in call order. A call that raises or returns
    something that is not a list of names keeps its seed first and ends the
    calls: the compile stage reports that call under that seed. With
    ``probe`` (``plugin_calls``), the calls end after that many when they all
    gave one order."""
    first: dict[tuple[str, ...], int] = {}
    rejected: list[int] = []
    # each call guarded as the compiler's is (copies of graph and deps, no os._exit,
    # no stdout), the guards set up once for all the calls
    with scheduler_calls(resolve_scheduler(spec)) as run:
        for calls, s in enumerate(seeds):
            if calls == probe and len(first) == 1:
                break  # one order from every seed so far: the seed does not matter here
            try:
                key = order_names(run(graph, deps, s), len(graph.nodes))
            except RefCompilerError:  # the user's error, reported when compiled; a CaseTimeout passes
                return [s] + rejected + list(first.values())[: PLUGIN_SEEDS - 1 - len(rejected)]
            except CaseTimeout as e:  # the campaign's limit, in this call: the case replays it with this seed
                e.schedule = ScheduleChoice(ScheduleSource.SCHEDULER, None, spec, s)
                raise
            if key in first:
                continue
            first[key] = s
            try:
                check_schedule(graph, key, deps)
            except InvariantViolation:
                rejected.append(s)
    kept = rejected[:PLUGIN_SEEDS]
    return kept + [s for s in first.values() if s not in set(kept)][: PLUGIN_SEEDS - len(kept)]


def _kahn(graph: Graph, deps: nx.DiGraph, pick: Callable[[int], int]) -> tuple[str, ...]:
    """The project's one loop making an order (``refcompiler.schedulers.kahn``), running
    the ready node at index ``pick(len(ready))`` of the ready nodes in creation order."""
    return tuple(kahn(graph, deps, lambda ready: ready[pick(len(ready))]))


def random_legal_order(graph: Graph, deps: nx.DiGraph, rng: random.Random) -> tuple[str, ...]:
    """A uniformly random ready node each step. Independent of the compiler's
    own random scheduler, so that a bug there is not shared."""
    return _kahn(graph, deps, rng.randrange)


def _legal_orders(graph: Graph, limit: int, deps: nx.DiGraph | None = None) -> list[tuple[str, ...]] | None:
    """Every legal order when there are at most ``limit``, else ``None``.
    ``deps``: ``graph``'s acyclic dependency graph, when the caller has made it
    (in the calling context: what ``all_legal_orders`` would make)."""
    found = all_legal_orders(graph, limit=limit + 1) if deps is None else legal_orders_of(deps, limit=limit + 1)
    orders = list(found)
    if len(orders) > limit:
        return None
    return orders


def _pair_witnesses(graph: Graph) -> list[tuple[str, ...]]:
    """For each pair of nodes that touch the same storage, at least one
    writing, and that the dependency model leaves unordered: a legal order
    with each first (``refcompiler.proofs.witness_schedules``, from the graph)."""
    effects = node_effects(graph)
    names = [n.name for n in graph.nodes]
    out: list[tuple[str, ...]] = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if conflict_storage(effects[a], effects[b]):
                pair = witness_schedules(graph, a, b)
                if pair is not None:  # None: the model orders a and b
                    out.extend(pair)
    return out


def case_schedules(
    graph: Graph,
    *,
    seed: int = 0,
    schedulers: Sequence[str] = ("topo",),
    randoms: int = 1,
    exhaustive_limit: int = EXHAUSTIVE_LIMIT,
    deps: nx.DiGraph | None = None,
) -> list[ScheduleChoice]:
    """The schedules the oracle checks a case under, deterministic in ``seed``:
    each scheduler's own, ``randoms`` random legal orders, the adversarial
    order, and every legal order when there are at most ``exhaustive_limit``
    (none when a user's scheduler is under test: its seeds are where the
    schedules go). Duplicate explicit orders are dropped.

    Needs a schedulable graph: its dependency graph must be acyclic (see
    ``scheduled_graph``); an empty list of explicit orders otherwise.
    ``deps``: ``dependency_graph(graph)`` made by the caller in the calling
    context, when it has it (it is not modified).
    """
    if any(is_plugin(s) for s in schedulers):
        exhaustive_limit = 0  # spend the schedules on the user's scheduler, not on every legal order
    deps = dependency_graph(graph) if deps is None else deps
    if not is_acyclic(deps):
        return [c for s in schedulers for c in scheduler_choices(s, seed)]
    choices = [c for s in schedulers for c in scheduler_choices(s, seed, graph, deps)]
    rng = random.Random(seed)
    explicit: list[ScheduleChoice] = [
        ScheduleChoice(ScheduleSource.RANDOM, random_legal_order(graph, deps, rng)) for _ in range(randoms)
    ]
    explicit.append(ScheduleChoice(ScheduleSource.ADVERSARIAL, tuple(adversarial_schedule(graph, deps))))
    if exhaustive_limit:
        orders = _legal_orders(graph, exhaustive_limit, deps) or []
        explicit.extend(ScheduleChoice(ScheduleSource.EXHAUSTIVE, o) for o in orders)
    seen: set[tuple[str, ...]] = set()
    for c in explicit:
        if c.order not in seen:
            seen.add(c.order)  # type: ignore[arg-type]
            choices.append(c)
    return choices


def schedules(
    graph: Graph,
    *,
    sources: Sequence[ScheduleSource] = tuple(ScheduleSource),
    schedulers: Sequence[str] = ("topo", "memory", "random"),
    exhaustive_limit: int = EXHAUSTIVE_LIMIT,
) -> st.SearchStrategy[ScheduleChoice]:
    """A strategy of schedules for a schedulable ``graph`` (see ``refcompiler.driver.scheduled_graph``),
    drawn from ``sources``. A random order is drawn step by step (an index
    among the ready nodes), so it shrinks towards creation order. The
    dependency model is the one of the calling context."""
    sources = tuple(dict.fromkeys(sources))
    if not sources or any(not isinstance(s, ScheduleSource) for s in sources):
        raise InvalidArgument(f"sources must be a non-empty list of ScheduleSource, got {sources!r}")
    deps = dependency_graph(graph)
    if not is_acyclic(deps):
        raise InvalidArgument("the graph's dependency graph has a cycle; pass scheduled_graph(graph)")
    options: list[st.SearchStrategy[ScheduleChoice]] = []
    for source in sources:
        if source is ScheduleSource.SCHEDULER:
            options.append(st.sampled_from(list(schedulers)).map(lambda s: ScheduleChoice(ScheduleSource.SCHEDULER, None, s)))
        elif source is ScheduleSource.RANDOM:
            options.append(_drawn_order(graph, deps))
        elif source is ScheduleSource.ADVERSARIAL:
            options.append(st.just(ScheduleChoice(source, tuple(adversarial_schedule(graph)))))
        elif source is ScheduleSource.WITNESS:
            found = _pair_witnesses(graph)
            if found:
                options.append(st.sampled_from(found).map(lambda o: ScheduleChoice(ScheduleSource.WITNESS, o)))
        elif source is ScheduleSource.EXHAUSTIVE:
            orders = _legal_orders(graph, exhaustive_limit)
            if orders:
                options.append(st.sampled_from(orders).map(lambda o: ScheduleChoice(ScheduleSource.EXHAUSTIVE, o)))
    if not options:
        options.append(_drawn_order(graph, deps))
    return st.one_of(options)


def _drawn_order(graph: Graph, deps: nx.DiGraph) -> st.SearchStrategy[ScheduleChoice]:
    @st.composite
    def order(draw: st.DrawFn) -> ScheduleChoice:
        return ScheduleChoice(ScheduleSource.RANDOM, _kahn(graph, deps, lambda n: draw(st.integers(0, n - 1))))

    return order()
