"""What the oracle's stages read: a ``GraphContext`` per graph (computed
once, however many schedules the graph is checked under) and a
``RunContext`` per schedule and pipeline.

The correct model's objects (the reference runs, ``prepared``, ``deps``) are
computed outside any mutant: they are the oracle. What the compiler under test
derives from the graph alone (``compiler_prepared``: verification, types, the
scheduled graph, its dependency model) is computed once, inside the mutant,
and shared by every schedule: those steps are deterministic functions of the
graph, so each compilation sees exactly what it would compute itself.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Mapping, Sequence

import networkx as nx
import numpy as np

from specs.cached import cached_property

from refcompiler.deps import check_schedule, deps_edges
from refcompiler.driver import Compiled, Prepared, fit_schedule, prepare, scheduled_model
from refcompiler.errors import InvariantViolation
from refcompiler.graph import Graph
from refcompiler.ir import Program
from refcompiler.mutants import activate
from refcompiler.passes import reproducible
from refcompiler.reference import run_reference
from refcompiler.symbolic.validate import SymbolicReference, small_enough, symbolic_reference
from refcompiler.values import Values, bind_inputs
from refcompiler.verifier import violations

from fuzz.case import PASS, Expect
from fuzz.oracle.finding import Unsettled
from fuzz.oracle.stage import OracleStage
from fuzz.sch1 import order_fault
from fuzz.schedules import ScheduleChoice

__all__ = ["Carry", "Runs", "GraphContext", "RunContext", "SchedulerAnswer", "reference_runs"]

Runs = tuple[Values, Values]


def reference_runs(graph: Graph, inputs: Mapping[str, np.ndarray] | None = None) -> Runs:
    """The reference's placeholders and owned variables after one and after two runs."""
    first = run_reference(graph, inputs)
    return first, run_reference(graph, first)


@dataclass
class GraphContext:
    """One graph as the chain checks it. The cached properties are computed on
    first use, once; ``schedules`` counts the distinct orders checked so far
    (``orders_checked``: the orders compiled); ``settled``: the per-graph
    stages that passed for this graph and inputs (in this case, or in an
    earlier one it was ``carried`` from), which the chain does not run again."""

    graph: Graph
    expect: Expect = PASS
    mutant: str | None = None
    seed: int = 0
    inputs: Mapping[str, np.ndarray] | None = None
    proof: bool = True
    # symbolic validation: True on, False off, None on for graphs small enough (``small_enough``)
    symbolic: bool | None = None
    settled: set[OracleStage] = field(default_factory=set, repr=False)
    schedules: int = 0
    orders_checked: set[tuple[str, ...]] = field(default_factory=set, repr=False)
    # the programs the symbolic stage could neither prove nor refute (inconclusive, not findings), in order
    symbolic_inconclusive: list[Unsettled] = field(default_factory=list, repr=False)
    target_refused: str | None = None  # why an external target refused the graph (not a finding)
    # canonical keys of the programs validated with no counterexample
    symbolic_seen: set[tuple] = field(default_factory=set, repr=False)
    # those Z3 gave no answer for in time (``Validation.unknown``): this case's own, as another try may answer
    symbolic_unknown: set[tuple] = field(default_factory=set, repr=False)
    seconds: Counter[str] = field(default_factory=Counter, repr=False)  # wall-clock seconds by stage (``chain``)
    # the order each scheduler asked gave, by (scheduler, seed): a user's may differ when asked again
    scheduler_orders: dict[tuple[str, int], tuple[str, ...]] = field(default_factory=dict, repr=False)
    # every compiled program whose per-schedule stages all passed, by its schedule
    _passed: dict[tuple[str, ...], tuple[Program, ...]] = field(default_factory=dict, repr=False)
    # the canonical keys (``canonical_key``) of those programs
    _passed_keys: set[tuple] = field(default_factory=set, repr=False)
    # what compiling an order under a pipeline gave, when it passed every per-schedule
    # stage and the pipeline is reproducible (``refcompiler.passes.reproducible``)
    _passed_compiled: dict[tuple[tuple[str, ...], str], Compiled] = field(default_factory=dict, repr=False)
    _reproducible: dict[str, bool] = field(default_factory=dict, repr=False)
    _illegal_given: dict[tuple[str, ...], InvariantViolation | None] = field(default_factory=dict, repr=False)
    _illegal: dict[tuple[int, tuple[str, ...]], tuple[Graph, InvariantViolation | None]] = field(default_factory=dict, repr=False)
    _compiler: Prepared | Exception | None = field(default=None, repr=False)
    _bound: tuple[Graph, Values] | None = field(default=None, repr=False)
    _compared: tuple[Graph, bool] | None = field(default=None, repr=False)

    def carried(self, seed: int, inputs: Mapping[str, np.ndarray] | None = None) -> GraphContext:
        """The context of another case of this graph (the same object,
        expectation, mutant and stage switches), with the schedule seed
        ``seed``, when this one's chain found nothing: what is known of the
        graph is kept (the per-graph stages that passed, ``settled``; its
        preparation and models; the programs validated symbolically, which
        are not validated again), and, when neither case overrides an input
        (``inputs``: the other case's overrides), what is known of its runs
        (the reference runs; the orders checked, which are not counted again;
        the programs that passed, which are not run again). The case's own
        record is not kept (``PER_CASE``: its count, time, scheduler answers
        and what it left unsettled, the programs Z3 gave no answer for in
        time included, which the next case validates again). Each check is a deterministic function
        of what its result is kept under, as within one case; a user's
        scheduler is still asked, and a user's pass still run, every time."""
        same_inputs = not inputs and not self.inputs
        full = self._entries() > CARRIED_ENTRIES  # a bound on memory: the tables start afresh
        new = copy.copy(self)  # the cached properties' values too, and the ``GRAPH_SHARED`` tables
        for f in fields(self):
            if f.name in PER_CASE or (f.name in INPUT_BOUND and not same_inputs) or (full and f.name in INPUT_BOUND | GRAPH_SHARED):
                setattr(new, f.name, f.default_factory() if callable(f.default_factory) else f.default)  # type: ignore[misc]
            elif f.name not in GRAPH_SHARED and isinstance(getattr(self, f.name), (set, dict)):
                setattr(new, f.name, copy.copy(getattr(self, f.name)))  # one level: the values are immutable or memos
        new.seed = seed
        if not same_inputs:
            new.inputs = inputs
            new.__dict__.pop("reference", None)
            new.settled = {s for s in self.settled if not s.reads_inputs}
        return new

    def _entries(self) -> int:
        """How many entries the tables of orders and programs hold."""
        tables = (getattr(self, name) for name in INPUT_BOUND | GRAPH_SHARED)
        return sum(len(t) for t in tables if isinstance(t, (set, dict)))

    @cached_property
    def violations(self) -> list[InvariantViolation]:
        """The graph verifier's findings, inside the mutant (it is under test)."""
        with activate(self.mutant):
            return violations(self.graph)

    @cached_property
    def reference(self) -> Runs:
        """The reference after one and two runs (raises what the reference raises)."""
        return reference_runs(self.graph, self.inputs)

    @property
    def symbolic_enabled(self) -> bool:
        """Whether the symbolic stage validates this graph's programs."""
        return self._small_enough if self.symbolic is None else self.symbolic

    @cached_property
    def _small_enough(self) -> bool:
        return small_enough(self.graph)

    @cached_property
    def symbolic_reference(self) -> SymbolicReference:
        """The reference after one and two runs on symbols, outside the mutant."""
        return symbolic_reference(self.graph, runs=2)

    @cached_property
    def _model(self) -> tuple[Graph, nx.DiGraph]:
        return scheduled_model(self.graph)

    @property
    def prepared(self) -> Graph:
        """The graph the correct compiler schedules (``refcompiler.driver.scheduled_graph``)."""
        return self._model[0]

    @property
    def deps(self) -> nx.DiGraph:
        """The correct dependency model of ``prepared``."""
        return self._model[1]

    @cached_property
    def _deps_edges(self) -> tuple[tuple[str, str], ...]:
        return deps_edges(self.deps)

    def compiler_prepared(self) -> Prepared:
        """``refcompiler.driver.prepare(graph)`` inside the mutant, made on the
        first call; every later call returns it, or raises the same error again
        (as each compilation would)."""
        if self._compiler is None:
            try:
                with activate(self.mutant):
                    self._compiler = prepare(self.graph)
            except Exception as e:  # kept, to be raised for every schedule
                self._compiler = e
        if isinstance(self._compiler, Exception):
            raise self._compiler
        return self._compiler

    def bound_inputs(self, scheduled: Graph) -> Values:
        """``bind_inputs(scheduled, inputs)`` for a compiled program's scheduled
        graph, remembered for the last graph object asked about (every schedule
        of ``compiler_prepared`` shares one). Raises what ``bind_inputs`` raises."""
        if self._bound is None or self._bound[0] is not scheduled:
            self._bound = (scheduled, bind_inputs(scheduled, self.inputs or {}))
        return self._bound[1]

    def illegal(self, scheduled: Graph, order: Sequence[str]) -> InvariantViolation | None:
        """``None`` when ``order`` is a legal order of ``scheduled`` under the
        correct model, else why not. Remembered per graph object and order
        (a pure function of them: every pipeline compiling an order asks;
        graphs are immutable, and the entry holds the graph, so its id is
        not reused while it is kept)."""
        key = (id(scheduled), tuple(order))
        found = self._illegal.get(key)
        if found is None or found[0] is not scheduled:
            found = self._illegal[key] = (scheduled, self._check_order(scheduled, key[1]))
        return found[1]

    def _check_order(self, scheduled: Graph, order: tuple[str, ...]) -> InvariantViolation | None:
        same = self._is_prepared(scheduled)
        try:
            check_schedule(scheduled, list(order), *((self.deps, self._deps_edges) if same else ()))
        except InvariantViolation as e:
            return e
        # the rule stated apart from the dependency model, which may be what is wrong
        fault = order_fault(scheduled, order)
        if fault is None:
            return None
        first, second, why = fault
        return InvariantViolation("SCH-1", f"'{second}' runs before '{first}', but {why} (SCH-1 stated apart from refc's dependency model)",
                                  names=(first, second))

    def _is_prepared(self, scheduled: Graph) -> bool:
        """``scheduled == prepared``, compared once for the last graph object asked
        about (graphs are immutable; every schedule of ``compiler_prepared`` shares one)."""
        if scheduled is self.prepared:
            return True
        if self._compared is None or self._compared[0] is not scheduled:
            self._compared = (scheduled, scheduled == self.prepared)
        return self._compared[1]

    def passed(self, program: Program) -> bool:
        """Whether a program equal to ``program`` (``passes`` aside) passed every
        per-schedule stage for this graph already."""
        return any(p == program for p in self._passed.get(program.schedule, ()))

    def passed_alike(self, key: tuple) -> bool:
        """Whether a program with canonical key ``key`` (``canonical_key``: equal
        up to the names of its activations and views, whatever its order) passed
        every per-schedule stage for this graph already. Such a program runs as
        that one ran: the same instructions, operands, arena offsets and module
        buffers, on the graph's same inputs."""
        return key in self._passed_keys

    def remember_passed(self, compiled: Compiled, pipeline: str, key: tuple) -> None:
        """``compiled``, the order ``compiled.schedule`` compiled under
        ``pipeline``, passed every per-schedule stage; ``key`` is its program's
        ``canonical_key``."""
        program = compiled.program
        self._passed_keys.add(key)
        if not self.passed(program):
            self._passed[program.schedule] = (*self._passed.get(program.schedule, ()), program)
        if pipeline not in self._reproducible:
            self._reproducible[pipeline] = reproducible(pipeline)
        if self._reproducible[pipeline]:
            self._passed_compiled.setdefault((compiled.schedule, pipeline), compiled)

    def passed_compiled(self, order: tuple[str, ...], pipeline: str) -> Compiled | None:
        """What compiling ``order`` (of ``compiler_prepared().scheduled``) under
        ``pipeline`` gave when that passed every per-schedule stage for this
        graph, if the pipeline is reproducible: compiling it again (inside the
        same mutant, from the same ``compiler_prepared``) gives an equal
        program, which would pass again (``passed``). ``None`` otherwise: never
        compiled, or what it found (an illegal order included) is found again."""
        return self._passed_compiled.get((order, pipeline))

    def illegal_given(self, order: Sequence[str]) -> InvariantViolation | None:
        """``illegal`` for an order of the graph's nodes, fitted to ``prepared``
        as ``compile_graph`` does. Remembered per order: every pipeline asks."""
        key = tuple(order)
        if key not in self._illegal_given:
            self._illegal_given[key] = self.illegal(self.prepared, fit_schedule(self.graph, self.prepared, key))
        return self._illegal_given[key]


# ``GraphContext`` fields that are a case's own record, not knowledge of its graph, and
# those that are knowledge of its runs on its inputs, besides ``reference`` (``carried``)
PER_CASE = frozenset({"schedules", "symbolic_inconclusive", "symbolic_unknown", "target_refused", "seconds", "scheduler_orders"})
INPUT_BOUND = frozenset({"orders_checked", "_passed", "_passed_keys", "_passed_compiled", "_bound"})
# entries (``_entries``) past which a carried context's tables start afresh
CARRIED_ENTRIES = 1024
# tables of facts about the graph alone, which a case never adds to before it knows them
# (not even one that then fails): the contexts carried from one another share them
GRAPH_SHARED = frozenset({"symbolic_seen", "_illegal", "_illegal_given", "_reproducible"})


class Carry:
    """What a campaign over one graph (``refc fuzz --graph``) carries from
    one case of that graph object to the next (its cases are that object with
    another schedule seed, or with other input values: ``GraphContext.carried``):
    the last context whose chain found nothing, and the last such context
    without input overrides, for the next case to start from. Only the
    contexts of refc's own compiler are kept."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._last: GraphContext | None = None
        self._plain: GraphContext | None = None

    def context(
        self, graph: Graph, expect: Expect, mutant: str | None, seed: int, symbolic: bool | None, inputs: Mapping[str, np.ndarray]
    ) -> GraphContext:
        """A context for a case of ``graph`` with input overrides ``inputs``:
        carried from one kept when that was of the same graph object under
        the same expectation, mutant and symbolic switch (without overrides,
        from the last one without them), else a new one."""
        for last in ((self._plain,) if not inputs else ()) + (self._last,):
            if last is not None and last.graph is graph and last.expect == expect and last.mutant == mutant and last.symbolic == symbolic:
                return last.carried(seed, inputs)
        return GraphContext(graph, expect, mutant, seed, inputs, symbolic=symbolic)

    def keep(self, ctx: GraphContext) -> None:
        """Keep ``ctx``, whose chain ran to its end and found nothing, if it is of the campaign's graph."""
        if ctx.graph is self.graph:
            self._last = ctx
            if not ctx.inputs:
                self._plain = ctx


@dataclass
class SchedulerAnswer:
    """What a scheduler choice's scheduler answered, asked once for the
    choice and shared by its pipelines (``refcompiler.driver.scheduler_order``,
    inside the mutant): ``order``, or ``error``, what asking raised; both
    ``None`` until it is asked."""

    order: tuple[str, ...] | None = None
    error: Exception | None = None


@dataclass
class RunContext:
    """One schedule under one pipeline. ``given``: the explicit order passed
    to the compiler (``None``: the scheduler's own, asked once for all the
    runs sharing ``answer``). A stage may leave results
    for the stages after it: ``compiled``, ``order`` (the order compiled),
    ``key`` (the program's ``canonical_key``) and ``got`` (the compiled
    program's values after one and two runs); ``got`` stays ``None`` when
    there is nothing to compare: nothing ran, or the program compiled equals
    one that passed every per-schedule stage for this graph already (another
    choice gave the same order, or the pipeline changed nothing that ``O0``
    did not: ``GraphContext.passed``), or is that program up to the names of
    its values (another order compiled alike: ``GraphContext.passed_alike``),
    so the same program would be run and compared again."""

    case: GraphContext
    choice: ScheduleChoice
    pipeline: str
    given: tuple[str, ...] | None = None
    compiled: Compiled | None = None
    order: tuple[str, ...] | None = None
    key: tuple | None = field(default=None, repr=False)
    got: Runs | None = field(default=None, repr=False)
    # the scheduler's answer for a scheduler choice, shared by the choice's runs
    answer: SchedulerAnswer = field(default_factory=SchedulerAnswer, repr=False)

    @property
    def where(self) -> dict[str, object]:
        """The finding fields naming this run."""
        return {"pipeline": self.pipeline, "schedule": self.choice}
