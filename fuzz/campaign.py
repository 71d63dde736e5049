"""The campaign runner (DESIGN §8): generate cases, check them, shrink and
deduplicate failures, write a summary, JUnit XML and corpus cases.

Work is cut into *chunks*. A chunk is one Hypothesis run in a worker:
``max_examples`` cases drawn from ``graphs()`` / ``invalid_graphs()``, each
checked by the oracle chain (``fuzz.oracle.check_case``). The first failure
whose signature the campaign does not know yet becomes the chunk's target:
Hypothesis shrinks it (the test body fails only on that signature), the
smallest failing case seen is kept, and the graph-level reducer
(``fuzz.shrink``) takes it to a local minimum. Every seed derives from the
campaign seed and the chunk index, and a count-bounded campaign
(``max_cases``) makes no decision based on time, so one worker and one seed
give one summary (timings aside).

Chunks run in the calling process (one worker), in a
``concurrent.futures.ProcessPoolExecutor``, or in any executor with the
same ``submit`` protocol passed in, e.g. a Dask ``Client.get_executor()``.
"""

from __future__ import annotations

import json
import os
import time
import xml.etree.ElementTree as ET
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Protocol, TextIO

import numpy as np
from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky, Unsatisfiable

from refcompiler.errors import UsageError
from refcompiler.graph import Graph
from refcompiler.graph_json import graph_to_doc, write_json_atomic

from fuzz.case import PASS, Case, Expect, ExpectKind, case_to_doc, reject
from fuzz.corpus import format_case_doc, replay, write_text_atomic
from fuzz.oracle import Finding, Signature, check_case, legal_on_correct_compiler
from fuzz.shrink import breaks_only, graph_size, reduce_graph, valid
from fuzz.strategies import REJECTABLE, graphs, invalid_graphs

__all__ = [
    "CampaignConfig",
    "Chunk",
    "ChunkResult",
    "Failure",
    "Summary",
    "run_campaign",
    "run_chunk",
    "write_outputs",
    "PlainProgress",
    "RichProgress",
    "NoProgress",
    "Kill",
    "score_mutant",
]

SUMMARY_FORMAT = "refc-fuzz-summary/1"


@dataclass(frozen=True)
class CampaignConfig:
    """What a campaign runs. ``budget`` (seconds) and ``max_cases`` bound it;
    with ``max_cases`` alone nothing depends on time. ``schedulers`` and
    ``pipeline`` are names or ``module:attribute`` specs (a user's code)."""

    budget: float | None = 60.0
    max_cases: int | None = None
    seed: int = 0
    workers: int = 1
    mutant: str | None = None
    schedulers: tuple[str, ...] = ("topo", "memory", "random")
    pipeline: str = "O2"
    out: Path | None = Path("fuzz-out")
    chunk_cases: int = 50
    max_nodes: int = 10
    invalid_share: float = 0.2
    shrink_calls: int = 200
    reduce_attempts: int = 150
    # with a time budget, each new failure may shrink this long past the deadline
    shrink_grace: float = 5.0
    stop_on_failure: bool = False

    def __post_init__(self) -> None:
        if self.budget is None and self.max_cases is None:
            raise UsageError("a campaign needs a time budget, a case count, or both")
        if self.budget is not None and not self.budget > 0:
            raise UsageError(f"the budget must be positive, got {self.budget}")
        if self.max_cases is not None and self.max_cases < 1:
            raise UsageError(f"the case count must be at least 1, got {self.max_cases}")
        if self.workers < 1:
            raise UsageError(f"workers must be at least 1, got {self.workers}")
        if not 0 <= self.invalid_share <= 1:
            raise UsageError(f"invalid_share must be within [0, 1], got {self.invalid_share}")
        if self.chunk_cases < 1 or self.max_nodes < 1:
            raise UsageError("chunk_cases and max_nodes must be at least 1")


@dataclass(frozen=True)
class Chunk:
    """One unit of work for a worker. ``known``: signatures already found (a
    failure with one of them is counted but not shrunk again). ``deadline``:
    wall-clock time (``time.time()``) to stop at, only in budget mode."""

    index: int
    seed: int
    cases: int
    config: CampaignConfig
    known: frozenset[Signature] = frozenset()
    deadline: float | None = None


@dataclass(frozen=True)
class Failure:
    """A new failure, shrunk. ``case_doc``: the corpus case document;
    ``found_at``: wall-clock time of the first failing case (before shrinking);
    ``reproduces``: replaying the stored case gives the same signature;
    ``passes_without_mutant``: replaying it without the mutant passes
    (``None`` when the campaign has no mutant)."""

    signature: Signature
    explanation: str
    case_doc: dict[str, Any]
    nodes: int
    found_at: float
    original_nodes: int
    reproduces: bool
    passes_without_mutant: bool | None


@dataclass(frozen=True)
class ChunkResult:
    index: int
    cases: int
    invalid_cases: int
    schedules: int
    failures: int
    found: tuple[Failure, ...]
    seconds: float


@dataclass
class Summary:
    """Totals of a campaign (mutable while it runs)."""

    config: CampaignConfig
    cases: int = 0
    invalid_cases: int = 0
    schedules: int = 0
    failures: int = 0
    seconds: float = 0.0
    chunks: int = 0
    planned: int = 0  # cases handed to chunks so far (a chunk may evaluate fewer: repeats are skipped)
    stopped_by: str = ""
    found: dict[Signature, Failure] = field(default_factory=dict)
    start: float = field(default_factory=time.time)
    case_files: dict[Signature, str] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.failures > 0 or bool(self.found)

    def rates(self) -> tuple[float, float]:
        s = max(self.seconds, 1e-9)
        return self.cases / s, self.schedules / s

    def to_doc(self) -> dict[str, Any]:
        cps, sps = self.rates()
        c = self.config
        signatures = []
        for sig in sorted(self.found):
            f = self.found[sig]
            signatures.append(
                {
                    "signature": sig.to_doc(),
                    "text": str(sig),
                    "explanation": f.explanation,
                    "case": self.case_files.get(sig),
                    "nodes": f.nodes,
                    "nodes_before_reduction": f.original_nodes,
                    "reproduces": f.reproduces,
                    "passes_without_mutant": f.passes_without_mutant,
                    "seconds_to_find": round(f.found_at - self.start, 3),
                }
            )
        return {
            "format": SUMMARY_FORMAT,
            "seed": c.seed,
            "workers": c.workers,
            "mutant": c.mutant,
            "budget": c.budget,
            "max_cases": c.max_cases,
            "schedulers": list(c.schedulers),
            "pipeline": c.pipeline,
            "cases": self.cases,
            "invalid_cases": self.invalid_cases,
            "schedules": self.schedules,
            "failures": self.failures,
            "distinct_failures": len(self.found),
            "signatures": signatures,
            "stopped_by": self.stopped_by,
            "seconds": round(self.seconds, 3),
            "cases_per_second": round(cps, 2),
            "schedules_per_second": round(sps, 2),
        }


# ---------------------------------------------------------------------------
# Seeds and the case strategy


def chunk_seed(campaign_seed: int, index: int) -> int:
    """The Hypothesis seed of chunk ``index``: a pure function of both."""
    return int(np.random.SeedSequence([campaign_seed, index]).generate_state(1)[0])


def fuzz_cases(config: CampaignConfig) -> st.SearchStrategy[tuple[Graph, Expect, int]]:
    """(graph, expectation, schedule seed): a valid graph, or with probability
    ``invalid_share`` one that breaks one of ``REJECTABLE``. Shrinks towards
    a valid graph and seed 0."""
    # One slot per rejectable invariant, and enough "valid" slots for the share;
    # index 0 (where shrinking goes) is "valid" unless every case is invalid.
    p = config.invalid_share
    n_valid = 1 if p == 0 else round(len(REJECTABLE) * (1 - p) / p)
    choices: list[str | None] = [None] * n_valid + (list(REJECTABLE) if p > 0 else [])

    @st.composite
    def case(draw: st.DrawFn) -> tuple[Graph, Expect, int]:
        which = draw(st.sampled_from(choices))
        if which is None:
            graph, expect = draw(graphs(max_nodes=config.max_nodes)), PASS
        else:
            graph, expect = draw(invalid_graphs(which, max_nodes=config.max_nodes)), reject(which)
        return graph, expect, draw(st.integers(0, 2**16))

    return case()


# ---------------------------------------------------------------------------
# One chunk, in a worker


class _Found(Exception):
    """Raised in the Hypothesis body on the chunk's target signature."""


def _key(graph: Graph, expect: Expect, case_seed: int) -> str:
    return json.dumps([graph_to_doc(graph), expect.to_doc(), case_seed], sort_keys=True)


def run_chunk(task: Chunk) -> ChunkResult:
    """Run one chunk (a top-level function, so that a process pool can call it)."""
    config = task.config
    start = time.time()
    cache: dict[str, Finding | None] = {}
    counts = {"cases": 0, "invalid": 0, "schedules": 0, "failures": 0, "shrink_calls": 0}
    target: list[Signature] = []
    first_failure_at: list[float] = []
    best: list[tuple[Graph, Expect, int, Finding]] = []

    shrink_deadline: list[float] = []

    def out_of_time() -> bool:
        if task.deadline is None:
            return False
        limit = shrink_deadline[0] if shrink_deadline else task.deadline
        return time.time() >= limit

    def evaluate(graph: Graph, expect: Expect, case_seed: int) -> Finding | None:
        report = check_case(
            Case(graph, expect, config.pipeline),
            mutant=config.mutant,
            schedulers=config.schedulers,
            seed=case_seed,
            target=target[0] if target else None,
            focus=best[0][3] if best else None,
        )
        counts["schedules"] += report.schedules
        return report.finding

    @settings(
        max_examples=task.cases,
        database=None,
        deadline=None,
        derandomize=False,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
        print_blob=False,
    )
    @seed(task.seed)
    @given(fuzz_cases(config))
    def body(case: tuple[Graph, Expect, int]) -> None:
        graph, expect, case_seed = case
        key = _key(graph, expect, case_seed)
        if key in cache:
            finding = cache[key]
        else:
            shrinking = bool(target)
            if out_of_time() or (shrinking and counts["shrink_calls"] >= config.shrink_calls):
                return
            if shrinking:
                counts["shrink_calls"] += 1
            else:
                counts["cases"] += 1
                counts["invalid"] += expect.kind is ExpectKind.REJECT
            finding = evaluate(graph, expect, case_seed)
            cache[key] = finding
            if finding is not None and not shrinking:
                counts["failures"] += 1
        if finding is None:
            return
        sig = finding.signature
        if not target:
            if sig in task.known:
                return
            target.append(sig)
            first_failure_at.append(time.time())
            if task.deadline is not None:
                shrink_deadline.append(max(task.deadline, time.time() + config.shrink_grace))
        if sig != target[0]:
            return
        if not best or graph_size(graph) < graph_size(best[0][0]):
            best[:] = [(graph, expect, case_seed, finding)]
        raise _Found()

    try:
        body()
    except (_Found, Flaky, Unsatisfiable):
        pass
    found: tuple[Failure, ...] = ()
    if best:
        found = (_finish(config, best[0], first_failure_at[0], out_of_time),)
    return ChunkResult(task.index, counts["cases"], counts["invalid"], counts["schedules"], counts["failures"], found, time.time() - start)


def _finish(config: CampaignConfig, example: tuple[Graph, Expect, int, Finding], found_at: float, stop: Callable[[], bool]) -> Failure:
    """Reduce the smallest failing example (until ``stop()``) and make it a
    corpus case that replays."""
    graph, expect, case_seed, finding = example
    sig = finding.signature

    def fails(g: Graph, focus: Finding | None = finding) -> Finding | None:
        return check_case(
            Case(g, expect, config.pipeline), mutant=config.mutant, schedulers=config.schedulers, seed=case_seed, target=sig, focus=focus
        ).finding

    acceptable: Callable[[Graph], bool] = valid if expect.kind is ExpectKind.PASS else breaks_only(expect.invariant or "")
    reduced = reduce_graph(graph, lambda g: fails(g) is not None, acceptable=acceptable, max_attempts=config.reduce_attempts, stop=stop)
    final = fails(reduced, None) or fails(reduced) or finding
    case = _storable(config, reduced, expect, final)
    again = replay(case, mutant=config.mutant)
    reproduces = again is not None and again.signature == sig
    passes_without = None if config.mutant is None else replay(case, mutant=None) is None
    return Failure(sig, final.explanation, case_to_doc(case), len(reduced.nodes), found_at, len(graph.nodes), reproduces, passes_without)


def _storable(config: CampaignConfig, graph: Graph, expect: Expect, finding: Finding) -> Case:
    """The corpus case for a finding: with the order that was compiled, when
    that order is legal on the correct compiler and replaying the case with it
    gives the same signature; else without an order (replay then checks the
    standard schedules). A stored schedule is always one the correct compiler
    accepts, so that the case is a plain regression test of its own."""
    found_by = f"refc fuzz --seed {config.seed}" + (f" --mutant {config.mutant}" if config.mutant else "")
    base = Case(graph, expect, config.pipeline, None, (), found_by, config.mutant)
    if expect.kind is ExpectKind.REJECT or finding.order is None:
        return base
    order = tuple(n for n in finding.order if n in graph.node_by_name)
    if not legal_on_correct_compiler(graph, order):
        return base
    with_order = replace(base, schedule=order)
    again = replay(with_order, mutant=config.mutant)
    if again is not None and again.signature == finding.signature:
        return with_order
    return base


# ---------------------------------------------------------------------------
# Progress


class Progress(Protocol):
    def update(self, summary: Summary, *, done: bool = False) -> None: ...

    def close(self) -> None: ...


class NoProgress:
    def update(self, summary: Summary, *, done: bool = False) -> None:
        pass

    def close(self) -> None:
        pass


def _status(summary: Summary) -> str:
    cps, sps = summary.rates()
    c = summary.config
    left = []
    if c.budget is not None:
        left.append(f"{max(0.0, c.budget - summary.seconds):.0f}s left")
    if c.max_cases is not None:
        left.append(f"{max(0, c.max_cases - summary.planned)} cases left")
    return (
        f"cases {summary.cases} ({cps:.1f}/s), schedules {summary.schedules} ({sps:.1f}/s), "
        f"failures {summary.failures} ({len(summary.found)} distinct), {', '.join(left)}"
    )


def _short_status(summary: Summary) -> str:
    """The live line: it must fit a terminal beside the bar and the time left."""
    cps, sps = summary.rates()
    return (
        f"{summary.cases} cases {cps:.0f}/s, {summary.schedules} sched {sps:.0f}/s, "
        f"{summary.failures} failing ({len(summary.found)} distinct)"
    )


class PlainProgress:
    """One line at most every ``interval`` seconds, and a last one when done."""

    def __init__(self, stream: TextIO, interval: float = 5.0):
        self.stream = stream
        self.interval = interval
        self.last = 0.0

    def update(self, summary: Summary, *, done: bool = False) -> None:
        now = time.monotonic()
        if done or now - self.last >= self.interval:
            self.last = now
            print(f"refc fuzz: {_status(summary)}", file=self.stream, flush=True)

    def close(self) -> None:
        pass


class RichProgress:
    """A live line with a bar on a terminal."""

    def __init__(self, stream: TextIO):
        from rich.console import Console
        from rich.progress import BarColumn, Progress as RichBar, TextColumn, TimeRemainingColumn

        self.bar = RichBar(
            TextColumn("[bold]refc fuzz[/bold] {task.description}"),
            BarColumn(bar_width=16),
            TimeRemainingColumn(),
            console=Console(file=stream),
            transient=False,
        )
        self.task: Any = None
        self.bar.start()

    def update(self, summary: Summary, *, done: bool = False) -> None:
        c = summary.config
        if c.max_cases is not None:
            total, completed = float(c.max_cases), float(summary.planned)
        else:
            total, completed = float(c.budget or 1), summary.seconds
        if self.task is None:
            self.task = self.bar.add_task(_short_status(summary), total=total)
        self.bar.update(self.task, description=_short_status(summary), completed=min(completed, total))

    def close(self) -> None:
        self.bar.stop()


# ---------------------------------------------------------------------------
# The campaign


def _next_chunk(config: CampaignConfig, summary: Summary, index: int) -> Chunk | None:
    """The next chunk to run, or ``None`` when the budget is spent."""
    if config.stop_on_failure and _killed(summary):
        return None
    cases = config.chunk_cases
    if config.max_cases is not None:
        remaining = config.max_cases - summary.planned
        if remaining <= 0:
            return None
        cases = min(cases, remaining)
    deadline = None
    if config.budget is not None:
        deadline = summary.start + config.budget
        if time.time() >= deadline:
            return None
    return Chunk(index, chunk_seed(config.seed, index), cases, config, frozenset(summary.found), deadline)


def _killed(summary: Summary) -> bool:
    """A failure that is the mutant's doing (its case passes without the
    mutant), or any failure when the campaign has no mutant."""
    return any(f.passes_without_mutant is not False for f in summary.found.values())


def _absorb(summary: Summary, result: ChunkResult) -> None:
    summary.cases += result.cases
    summary.invalid_cases += result.invalid_cases
    summary.schedules += result.schedules
    summary.failures += result.failures
    summary.chunks += 1
    for failure in result.found:
        old = summary.found.get(failure.signature)
        if old is None or (failure.nodes, failure.found_at) < (old.nodes, old.found_at):
            summary.found[failure.signature] = failure


def run_campaign(
    config: CampaignConfig,
    *,
    executor: Executor | None = None,
    progress: Progress | None = None,
) -> Summary:
    """Run a campaign and return its summary (nothing is written; see
    ``write_outputs``). With one worker and no ``executor``, chunks run in
    this process, in order; otherwise ``config.workers`` chunks are in flight
    at once in ``executor`` (default: a process pool of that many workers)."""
    progress = progress or NoProgress()
    summary = Summary(config)
    index = 0
    try:
        if executor is None and config.workers == 1:
            while (chunk := _next_chunk(config, summary, index)) is not None:
                summary.planned += chunk.cases
                index += 1
                _absorb(summary, run_chunk(chunk))
                summary.seconds = time.time() - summary.start
                progress.update(summary)
        else:
            own = executor is None
            pool = executor or ProcessPoolExecutor(max_workers=config.workers)
            try:
                pending: set[Future[ChunkResult]] = set()
                while True:
                    while len(pending) < config.workers and (chunk := _next_chunk(config, summary, index)) is not None:
                        summary.planned += chunk.cases
                        index += 1
                        pending.add(pool.submit(run_chunk, chunk))
                    if not pending:
                        break
                    done, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
                    for fut in done:
                        _absorb(summary, fut.result())
                    summary.seconds = time.time() - summary.start
                    progress.update(summary)
            finally:
                if own:
                    pool.shutdown(wait=True, cancel_futures=True)
    finally:
        summary.seconds = time.time() - summary.start
        if config.stop_on_failure and _killed(summary):
            summary.stopped_by = "failure"
        elif config.max_cases is not None and summary.planned >= config.max_cases:
            summary.stopped_by = "cases"
        else:
            summary.stopped_by = "budget"
        progress.update(summary, done=True)
        progress.close()
    return summary


# ---------------------------------------------------------------------------
# Scoring a mutant: a thin layer on a campaign


@dataclass(frozen=True)
class Kill:
    """How a campaign fared against one mutant. ``seconds``: from the start
    to the first failing case that is the mutant's doing (``None``: it
    survived); ``failure``: that failure, shrunk."""

    mutant: str
    seconds: float | None
    cases: int
    failure: Failure | None

    @property
    def killed(self) -> bool:
        return self.failure is not None


def score_mutant(mutant: str, *, budget: float = 60.0, seed: int = 0, workers: int = 1, executor: Executor | None = None) -> Kill:
    """Run a campaign against ``mutant`` until its first kill (a failure whose
    shrunk case passes on the correct compiler) or the budget runs out."""
    config = CampaignConfig(budget=budget, seed=seed, workers=workers, mutant=mutant, stop_on_failure=True, out=None)
    summary = run_campaign(config, executor=executor)
    kills = sorted((f for f in summary.found.values() if f.passes_without_mutant), key=lambda f: f.found_at)
    if not kills:
        return Kill(mutant, None, summary.cases, None)
    return Kill(mutant, kills[0].found_at - summary.start, summary.cases, kills[0])


# ---------------------------------------------------------------------------
# Outputs


def write_outputs(summary: Summary, out: Path) -> None:
    """``out/summary.json``, ``out/junit.xml`` and ``out/cases/<signature>.json``
    (one shrunk case per distinct signature), each written atomically."""
    cases_dir = out / "cases"
    for sig, failure in sorted(summary.found.items()):
        path = cases_dir / f"{sig.slug}.json"
        write_text_atomic(path, format_case_doc(failure.case_doc))
        summary.case_files[sig] = str(path.relative_to(out))
    write_json_atomic(out / "summary.json", summary.to_doc())
    write_text_atomic(out / "junit.xml", junit_xml(summary))


def junit_xml(summary: Summary) -> str:
    """A JUnit report: one test case per distinct failure signature, or one
    passing test case when nothing failed."""
    doc = summary.to_doc()
    suite = ET.Element(
        "testsuite",
        name="refc fuzz",
        tests=str(max(1, len(summary.found))),
        failures=str(len(summary.found)),
        errors="0",
        skipped="0",
        time=f"{summary.seconds:.3f}",
    )
    props = ET.SubElement(suite, "properties")
    for key in ("seed", "workers", "mutant", "cases", "schedules", "failures", "cases_per_second", "schedules_per_second"):
        ET.SubElement(props, "property", name=key, value=str(doc[key]))
    if not summary.found:
        ET.SubElement(suite, "testcase", classname="refc.fuzz", name=f"{summary.cases} cases, no failure", time=f"{summary.seconds:.3f}")
    for entry in doc["signatures"]:
        tc = ET.SubElement(suite, "testcase", classname="refc.fuzz", name=entry["text"], time="0")
        failure = ET.SubElement(tc, "failure", message=entry["explanation"][:500], type=entry["signature"]["invariant"])
        failure.text = (
            f"{entry['explanation']}\nshrunk case: {entry['case']} ({entry['nodes']} nodes)\n"
            f"replay: refc replay {entry['case']}" + (f" --mutant {summary.config.mutant}" if summary.config.mutant else "")
        )
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))
