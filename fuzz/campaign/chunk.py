"""One chunk of a campaign, in a worker: ``cases`` cases drawn at random
(``cases.random_case``: case k a function of the chunk's seed and k, its
choices recorded). The first failure whose signature the campaign does not
know yet becomes the chunk's target: Hypothesis shrinks it, starting from that
case's recorded choices (``draws.OneExample``; the test body fails only on
that signature's ``Bug``, i.e. its op kinds may change, so shrinking can reach
the simplest op at the fault), the smallest failing example seen is kept, and
``failure.finish`` reduces and stores it under the shrunk case's signature.
Generating at random instead of through Hypothesis: a Hypothesis draw cost
~100-150 us, a case ~40 of them, and a quarter of its examples repeated an
earlier case."""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Callable

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis.errors import Flaky, Unsatisfiable

from refcompiler.collector import fewer_collections
from refcompiler.errors import InternalError, LimitExceeded, UsageError
from refcompiler.graph import Graph
from refcompiler.graph_json import graph_to_doc
from refcompiler.passes import reproducible

from fuzz.campaign.cases import Case3, fuzz_cases, input_seeds, random_case
from fuzz.campaign.config import END_MARGIN, HARD_GRACE, CampaignConfig
from fuzz.campaign.failure import CaseCut, Example, Failure, check_within, finish
from fuzz.campaign.live import Live, end_requested, set_running
from fuzz.campaign.repeatable import no_local_constants
from fuzz.campaign.unsettled import MAX_KEPT, UnsettledCase, kind_of, unsettled_case
from fuzz.case import Case, Expect, ExpectKind
from fuzz.oracle import Bug, Carry, Finding, Signature, Unsettled
from fuzz.schedules import is_plugin
from fuzz.shrink import graph_size
from fuzz.strategies.draws import Choice, OneExample

__all__ = ["Chunk", "ChunkInterrupted", "ChunkResult", "ChunkState", "continuation", "run_chunk"]


@dataclass(frozen=True)
class Chunk:
    """One unit of work for a worker. ``known``: signatures already found (a
    failure with one of them is counted but not shrunk again). ``deadline``:
    wall-clock time (``time.time()``) to stop at, only in budget mode.
    ``first``: the index of its first case among its seed's; ``part``: 0, or
    which continuation of chunk ``index`` it is (the cases a chunk that
    stopped at a failure left unchecked, ``continuation``)."""

    index: int
    seed: int
    cases: int
    config: CampaignConfig
    known: frozenset[Signature] = frozenset()
    deadline: float | None = None
    first: int = 0
    part: int = 0


def continuation(chunk: Chunk, result: "ChunkResult") -> Chunk | None:
    """The rest of ``chunk`` after ``result``: a chunk ends at its first new
    failure, and in a campaign bounded by a case count (no deadline) the cases
    it left unchecked are checked by this chunk, which knows what it found
    (counted, not shrunk again); ``None`` when none are left. A function of
    the chunk and its result only: the campaign is the same whichever
    chunks end first."""
    left = chunk.cases - result.cases
    if left <= 0 or not result.found or chunk.deadline is not None:
        return None
    return replace(chunk, first=chunk.first + result.cases, cases=left, part=chunk.part + 1,
                   known=chunk.known | {f.signature for f in result.found})


@dataclass(frozen=True)
class ChunkResult:
    index: int
    cases: int
    invalid_cases: int
    schedules: int
    failures: int
    found: tuple[Failure, ...]
    seconds: float
    refused: tuple[tuple[str, int], ...] = ()  # an external target's refusals: (reason, graphs)
    seconds_by_stage: tuple[tuple[str, float], ...] = ()  # where the chunk's time went (``ChunkState.seconds``)
    part: int = 0  # the chunk's ``Chunk.part``
    cut: str | None = None  # why the chunk ended with a case unchecked (``CaseCut``)
    unsettled: int = 0  # programs the symbolic stage left unsettled (``ChunkState.unsettled``)
    unsettled_cases: int = 0  # cases with at least one
    unsettled_kept: tuple[UnsettledCase, ...] = ()  # the first ``MAX_KEPT`` of those cases, storable


@dataclass
class ChunkState:
    """What a chunk has seen so far. ``target``: the bug being shrunk;
    ``best``: the smallest example failing with it; ``shrink_deadline``: in
    budget mode, when shrinking the target must stop."""

    cases: int = 0
    invalid: int = 0
    schedules: int = 0
    failures: int = 0
    shrink_calls: int = 0
    cache: dict[tuple[Graph, Expect, int], tuple[Graph, Finding | None]] = field(default_factory=dict)  # the graph: whose finding
    target: Bug | None = None
    first_failure_at: float | None = None
    best: Example | None = None
    shrink_deadline: float | None = None
    refused: Counter[str] = field(default_factory=Counter)  # new graphs an external target refused, by reason
    hypothesis_until: float | None = None  # budget mode: Hypothesis's shrinking ends then, the reducer gets the rest
    from_nodes: int | None = None  # nodes of the target's first failing example
    nodes: int | None = None  # nodes of the smallest failing example so far (Hypothesis, then the reducer)
    # wall-clock seconds by oracle stage (shrink attempts included), ``GENERATE`` and ``REDUCE``
    seconds: Counter[str] = field(default_factory=Counter)
    # budget mode: the chunk's last moment, by which it must have answered (``failure.check_within`` limits each case by it)
    end: float | None = None
    cut: str | None = None  # ``CaseCut``'s message: the case the chunk's end found unchecked
    # the new cases' programs the symbolic stage could neither prove nor refute (not findings):
    # how many, in how many cases, and the first ``MAX_KEPT`` cases, kept to be looked at
    unsettled: int = 0
    unsettled_cases: int = 0
    unsettled_kept: list[UnsettledCase] = field(default_factory=list)

    @property
    def phase(self) -> str:
        """What the chunk is doing, for a person: ``generating``, or e.g.
        ``shrinking SCH-1 at compile by scheduler (8 nodes -> 3)``."""
        if self.target is None:
            return "generating"
        b = self.target
        by = f" by {b.blame}" if b.blame else ""
        return f"shrinking {b.invariant} at {b.stage}{by} ({self.from_nodes} nodes -> {self.nodes})"


    def live(self) -> Live:
        return Live(self.cases, self.invalid, self.schedules, self.failures, self.phase)


# ``ChunkState.seconds``' keys besides the oracle's stages: the case generator
# and Hypothesis's shrinking (all a chunk's time outside the oracle before its
# failure is reduced), and the reducer of that failure (its oracle calls included)
GENERATE = "generate"
REDUCE = "reduce"


class ChunkInterrupted(KeyboardInterrupt):
    """A signal cut a chunk short in the campaign's own process (one worker:
    the signal raises there; a pool's worker is asked instead, ``request_end``):
    ``result`` holds what it had checked by then, and its failure, if it found
    one, stored without further reduction."""

    def __init__(self, result: ChunkResult):
        super().__init__(f"chunk {result.index} interrupted")
        self.result = result


class _Found(Exception):
    """Raised in the test body on the chunk's target signature."""


class _OutOfTime(BaseException):
    """Raised in the test body past the chunk's deadline: not an
    ``Exception``, so Hypothesis neither shrinks nor retries it, and the run
    ends at once (generation and shrinking alike)."""


def _key(graph: Graph, expect: Expect, case_seed: int) -> tuple[Graph, Expect, int]:
    """The chunk's cache key of a case: the case itself (graphs and
    expectations are immutable, compared by value; a JSON text of the
    document was 1.6% of a campaign). Values can be equal where documents
    differ (``0.0`` and ``-0.0``, both tie values): a hit is taken only for
    an equal document (``_same_document``)."""
    return graph, expect, case_seed


def _same_document(a: Graph, b: Graph) -> bool:
    """Whether ``a`` and ``b``, equal as values, are the same graph document."""
    return a is b or json.dumps(graph_to_doc(a), sort_keys=True) == json.dumps(graph_to_doc(b), sort_keys=True)


class _ChunkRun:
    def __init__(self, task: Chunk):
        self.task = task
        self.config = task.config
        self.state = ChunkState()
        # what one case of the graph of ``--graph`` leaves the next
        self.carry = Carry(self.config.graph) if self.config.graph is not None else None
        # only refc's own code is known not to look at the seeds a graph's storages
        # carry (a user's pass sees them in the program's buffers, a target in the graph)
        config = self.config
        self.seeds_as_inputs = (config.target is None and reproducible(config.pipeline)
                                and not any(is_plugin(s) for s in config.schedulers))
        if task.deadline is not None:
            self.state.end = task.deadline + self.config.shrink_grace + HARD_GRACE - END_MARGIN

    def out_of_time(self) -> bool:
        if end_requested():
            return True
        if self.task.deadline is None:
            return False
        limit = self.state.shrink_deadline if self.state.shrink_deadline is not None else self.task.deadline
        return time.time() >= limit

    def evaluate(self, graph: Graph, expect: Expect, case_seed: int) -> Finding | None:
        s = self.state
        focus = s.best.finding if s.best is not None else None
        report = check_within(self.config, self._case(graph, expect), seed=case_seed, target=s.target, focus=focus, carry=self.carry)
        s.schedules += report.schedules
        s.seconds.update(report.seconds)
        if s.target is None:  # a new graph, not a shrink attempt
            if report.refused is not None:
                s.refused[report.refused[:200]] += 1
            if report.unsettled:
                s.unsettled += len(report.unsettled)
                s.unsettled_cases += 1
                self._keep_unsettled(graph, expect, case_seed, report.unsettled)
        return report.finding

    def _case(self, graph: Graph, expect: Expect) -> Case:
        """The case checked for ``graph``: under ``--graph``, a copy of the
        graph with other seeds (``one_graph_case``) is the graph itself with
        those values as input overrides, which checks alike and lets the
        chunk's ``Carry`` start from what earlier cases of the graph left.
        Not when a user's pass or scheduler or an external target is under
        test (``seeds_as_inputs``): that code sees the graph's seeds (a
        program's buffers carry them), and would compile the graph itself
        where the campaign means it to compile the copy."""
        given = self.config.graph
        seeds = input_seeds(graph, given) if given is not None and self.seeds_as_inputs else None
        if seeds is None:
            return Case(graph, expect, self.config.pipeline)
        return Case(given, expect, self.config.pipeline, inputs=seeds)  # type: ignore[arg-type]  # seeds: given is set

    def _keep_unsettled(self, graph: Graph, expect: Expect, case_seed: int, unsettled: tuple[Unsettled, ...]) -> None:
        """Keep the case of the first of ``unsettled`` whose kind (``UnsettledCase.kind``)
        the chunk has not kept, while it keeps fewer than ``MAX_KEPT``."""
        s = self.state
        known = {case.kind for case in s.unsettled_kept}
        for u in unsettled:
            if len(s.unsettled_kept) < MAX_KEPT and kind_of(u) not in known:
                s.unsettled_kept.append(unsettled_case(self.config, graph, expect, case_seed, u))
                return

    def finding_of(self, graph: Graph, expect: Expect, case_seed: int) -> Finding | None:
        """What the oracle finds for the case, or found before (the chunk's
        cache): new cases count, shrink attempts count against
        ``shrink_calls``. Raises ``_OutOfTime`` past the chunk's deadline, and,
        while shrinking, at the first attempt that would need the oracle once
        ``shrink_calls`` are spent or Hypothesis's time is up: its shrinking
        ends there (no attempt after it could be checked) and the reducer
        takes over."""
        s, key = self.state, _key(graph, expect, case_seed)
        known = s.cache.get(key)
        if known is not None and _same_document(known[0], graph):
            return known[1]
        shrinking = s.target is not None
        if self.out_of_time() or (shrinking and self._shrinking_spent()):
            raise _OutOfTime()
        if shrinking:
            s.shrink_calls += 1
        else:
            s.cases += 1
            s.invalid += expect.kind is ExpectKind.REJECT
        finding = self.evaluate(graph, expect, case_seed)
        s.cache[key] = (graph, finding)
        if finding is not None and not shrinking:
            s.failures += 1
        return finding

    def _shrinking_spent(self) -> bool:
        s = self.state
        return s.shrink_calls >= self.config.shrink_calls or (s.hypothesis_until is not None and time.time() >= s.hypothesis_until)

    def body(self, case: Case3) -> None:
        """Check one case (generated, or a shrink attempt): fails (``_Found``)
        on the target signature, the first new one becoming the target."""
        graph, expect, case_seed = case
        finding = self.finding_of(graph, expect, case_seed)
        if finding is None:
            return
        s, sig = self.state, finding.signature
        if s.target is None:
            if sig in self.task.known:
                return
            s.target, s.first_failure_at, s.from_nodes = sig.bug, time.time(), len(graph.nodes)
            if self.task.deadline is not None:
                s.shrink_deadline = max(self.task.deadline, time.time() + self.config.shrink_grace)
                s.hypothesis_until = time.time() + self.config.hypothesis_shrink_seconds
        if sig.bug != s.target:
            return
        if s.best is None or graph_size(graph) < graph_size(s.best.graph):
            s.best = Example(graph, expect, case_seed, finding)
            s.nodes = len(graph.nodes)
        raise _Found()

    def run(self) -> ChunkResult:
        """The chunk's result; a signal that cuts it short (``KeyboardInterrupt``)
        comes out as ``ChunkInterrupted``, carrying what was checked by then."""
        set_running(self.state)
        start = time.time()
        try:
            return self._result(start, self._generate_and_reduce(start))
        except KeyboardInterrupt:
            raise ChunkInterrupted(self._result(start, self._found(lambda: True))) from None

    def _generate_and_reduce(self, start: float) -> tuple[Failure, ...]:
        try:
            with no_local_constants():
                self.generate()
        except (UsageError, InternalError):
            raise
        except LimitExceeded as e:  # the limits a user set (REFC_MAX_*) are below what the generator draws
            raise UsageError(f"a generated graph is beyond a resource limit: {e}; raise that limit, "
                             "or draw smaller graphs (--max-nodes, --max-dim)") from None
        except Exception as e:  # the oracle turns what a compiler raises into findings: this is refc's own
            raise InternalError(f"chunk {self.task.index} (seed {self.task.seed}) failed outside the oracle, "
                                f"a bug in refc's case generator or oracle: {type(e).__name__}: {e}") from e
        s = self.state
        s.seconds[GENERATE] += max(0.0, time.time() - start - sum(s.seconds.values()))
        reducing = time.time()
        found = self._found(self.out_of_time)
        if found:
            s.seconds[REDUCE] += time.time() - reducing
        return found

    def _found(self, stop: Callable[[], bool]) -> tuple[Failure, ...]:
        """The target's failure, reduced until ``stop()`` (stored and replayed
        as ``failure.finish`` does), or nothing if the chunk found none. After a
        signal ``stop`` is always true: the smallest example so far is stored
        as it is (a second signal does not break in: only the first raises)."""
        s = self.state
        if s.best is None or s.first_failure_at is None:
            return ()
        return (finish(self.config, s.best, s.first_failure_at, stop, on_smaller=self._smaller),)

    def _result(self, start: float, found: tuple[Failure, ...]) -> ChunkResult:
        s = self.state
        return ChunkResult(self.task.index, s.cases, s.invalid, s.schedules, s.failures, found, time.time() - start,
                           tuple(s.refused.items()), tuple(sorted(s.seconds.items())), self.task.part, s.cut,
                           s.unsettled, s.unsettled_cases, tuple(s.unsettled_kept))

    def generate(self) -> None:
        """Check the chunk's cases in order until the first new failure, which
        Hypothesis then shrinks (``shrink``), or the deadline."""
        for k in range(self.task.first, self.task.first + self.task.cases):
            case, choices = random_case(self.config, self.task.seed, k)
            try:
                self.body(case)
            except _Found:
                self.shrink(choices)
                return
            except _OutOfTime:
                return
            except CaseCut as e:  # counted when it began: it was not checked
                self.state.cut = str(e)
                self.state.cases -= 1
                self.state.invalid -= case[1].kind is ExpectKind.REJECT
                return

    def shrink(self, choices: list[Choice]) -> None:
        """Hypothesis's shrinking of the target, from the failing case's
        choices: its reuse phase replays them (the case is in the cache: no
        oracle call) and its shrink phase goes on from there. Should the
        replay not fail, nothing is shrunk and ``best`` stays the failing case
        itself, for the reducer."""
        def body(case: Case3) -> None:
            self.body(case)

        test = seed(self.task.seed)(given(fuzz_cases(self.config))(body))
        test = settings(
            max_examples=self.task.cases,
            database=OneExample(choices),
            deadline=None,
            derandomize=False,
            phases=(Phase.reuse, Phase.shrink),
            suppress_health_check=list(HealthCheck),
            verbosity=Verbosity.quiet,
            report_multiple_bugs=False,
            print_blob=False,
        )(test)
        try:
            test()
        except (_Found, _OutOfTime, Flaky, Unsatisfiable):
            pass

    def _smaller(self, nodes: int) -> None:
        self.state.nodes = nodes


def run_chunk(task: Chunk) -> ChunkResult:
    """Run one chunk (a top-level function, so that a process pool can call
    it), the collector running less often (``fewer_collections``)."""
    with fewer_collections():
        return _ChunkRun(task).run()
