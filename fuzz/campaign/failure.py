"""A new failure of a chunk, made small and storable: the graph-level
reducer takes the smallest failing example to a local minimum, and the result
becomes a corpus case that replays."""

from __future__ import annotations

import shlex
import threading
import time
from dataclasses import dataclass, replace
from importlib import metadata
from typing import Any, Callable

from refcompiler import memos
from refcompiler.driver import scheduled_graph
from refcompiler.errors import MalformedInput
from refcompiler.graph import Graph

from fuzz.campaign.config import HARD_GRACE, CampaignConfig
from fuzz.campaign.fresh import NoAnswer, fresh_signature
from fuzz.campaign.live import running
from fuzz.case import Case, Expect, ExpectKind, FindingRecord, TargetRecord, case_from_doc, case_to_doc, whole_order
from fuzz.corpus import replay
from fuzz.oracle import Bug, Carry, CaseReport, Finding, Signature, Stage, check_case, legal_on_correct_compiler
from fuzz.replay import case_problem, plugin_modules
from fuzz.schedules import ScheduleChoice, ScheduleSource, is_plugin
from fuzz.shrink import breaks_only, reduce_graph, valid
from fuzz.time_limit import CaseTimeout, time_limit

__all__ = ["CaseCut", "Example", "Failure", "check_within", "finish", "found_by", "scheduled_case", "timeout_finding"]


@dataclass(frozen=True)
class Example:
    """A failing case as drawn: the graph, its expectation, its schedule seed,
    and what the oracle found."""

    graph: Graph
    expect: Expect
    seed: int
    finding: Finding


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
    not_reproduced: str | None = None  # why replay did not reproduce it, when it did not


def finish(config: CampaignConfig, example: Example, found_at: float, stop: Callable[[], bool],
           on_smaller: Callable[[int], None] = lambda nodes: None) -> Failure:
    """Reduce the smallest failing example (until ``stop()``) and make it a
    corpus case that replays. ``on_smaller(nodes)``: each time the reducer
    keeps a smaller failing graph (for the progress display)."""
    graph, expect, finding = example.graph, example.expect, example.finding
    bug = finding.signature.bug  # the reducer may change the op kinds at the fault, not the bug

    def fails(g: Graph, focus: Finding | None = finding) -> Finding | None:
        case = Case(g, expect, config.pipeline)
        return check_within(config, case, seed=example.seed, target=bug, focus=focus).finding

    acceptable: Callable[[Graph], bool] = valid if expect.kind is ExpectKind.PASS else breaks_only(expect.invariant or "")
    def still_fails(g: Graph) -> bool:
        failed = fails(g) is not None
        if failed:
            on_smaller(len(g.nodes))
        return failed

    reduced = reduce_graph(graph, still_fails, acceptable=acceptable, max_attempts=config.reduce_attempts, stop=stop)
    final = fails(reduced, None) or fails(reduced) or finding
    sig = final.signature  # the shrunk case's: what the campaign deduplicates by
    case = _storable(config, reduced, expect, final, example.seed)
    doc = case_to_doc(case)
    try:
        stored = case_from_doc(doc)  # replayed as it will be read back
        problem = case_problem(stored)
    except MalformedInput as e:
        problem = str(e)
    if problem is not None:  # a bug of refc's: what it stores, it reads back
        return Failure(sig, final.explanation, doc, len(reduced.nodes), found_at, len(graph.nodes), False, None,
                       f"the stored case is malformed: {problem}")
    try:
        again = _replay(config, stored, config.mutant)
        passes_without = None if config.mutant is None else _replay(config, stored, None) is None
    except CaseCut:
        return Failure(sig, final.explanation, doc, len(reduced.nodes), found_at, len(graph.nodes), False, None,
                       "the campaign's time was up before it could be replayed")
    why = None
    if again is None:
        why = "replaying the stored case finds nothing"
    elif again.signature != sig:
        why = f"replaying the stored case finds {again.signature} instead"
    elif plugin_modules(stored):
        why = _alone(config, doc, sig)
    return Failure(sig, final.explanation, doc, len(reduced.nodes), found_at, len(graph.nodes), why is None, passes_without, why)


def versions(target: str | None = None) -> tuple[tuple[str, str], ...]:
    """The versions a case was found with: refc, numpy, hypothesis, z3, and
    with ``target`` (a ``--target`` spec) what that target says it runs on
    (its ``versions()``: onnxruntime's, onnx's; nothing more when a user's
    raises, exits or returns no mapping), under refc's own names."""
    out = []
    for package in ("refc", "numpy", "hypothesis", "z3-solver"):
        try:
            out.append((package, metadata.version(package)))
        except metadata.PackageNotFoundError:
            out.append((package, "unknown"))
    if target is not None:
        from refcompiler.targets import target_versions

        known = dict(out)
        out.extend((k, v) for k, v in target_versions(target).items() if k not in known)
    return tuple(out)


def found_by(config: CampaignConfig) -> str:
    """The ``refc fuzz`` command that finds a campaign's failures again: its seed
    and every option that changes what is tested or generated (the mutant, the
    scheduler and pipeline under test, the target, the graph, the graph size,
    the symbolic stage) that is not the default."""
    words = ["refc", "fuzz", "--seed", str(config.seed)]
    if config.mutant:
        words += ["--mutant", config.mutant]
    if config.schedulers != CampaignConfig.schedulers and len(config.schedulers) == 1:
        words += ["--scheduler", config.schedulers[0]]
    if config.pipeline != CampaignConfig.pipeline:
        words += ["--pipeline", config.pipeline]
    if config.target:
        words += ["--target", config.target]
    if config.graph_file:
        words += ["--graph", config.graph_file]
    if config.max_nodes != CampaignConfig.max_nodes:
        words += ["--max-nodes", str(config.max_nodes)]
    if config.max_dim != CampaignConfig.max_dim:
        words += ["--max-dim", str(config.max_dim)]
    if config.symbolic is not None:
        words += ["--symbolic", "on" if config.symbolic else "off"]
    return shlex.join(words)


def _storable(config: CampaignConfig, graph: Graph, expect: Expect, finding: Finding, seed: int) -> Case:
    """The corpus case for a finding, recording what the campaign ran
    (``scheduled_case``): under a scheduler's own order, a user's scheduler
    with the seed it was called with; a built-in one's order when that is
    legal on the correct compiler and reproduces (a plain regression test of
    its own), else the scheduler and seed. Other explicit orders: stored when
    legal and reproducing, else none (replay then checks the standard schedules).
    The pipeline recorded is the one the finding was made under: ``O0``, which
    every schedule is compiled with beside the pipeline under test, when the
    fault showed there (``refc compile`` or ``run`` of the case then shows it)."""
    record = FindingRecord(str(finding.signature), finding.explanation, finding.location.nodes, finding.location.instruction)
    pipeline = config.pipeline if finding.pipeline is None else finding.pipeline
    base = Case(graph, expect, pipeline, None, (), found_by(config), config.mutant,
                versions=versions(config.target), command=config.command, target=_target_record(config, finding), finding=record)
    if expect.kind is ExpectKind.REJECT:
        return base
    return scheduled_case(base, graph, finding.schedule, finding.order, seed, lambda case: _reproduces(config, case, finding.signature))


def scheduled_case(base: Case, graph: Graph, choice: ScheduleChoice | None, order: tuple[str, ...] | None, seed: int,
                   keeps: Callable[[Case], bool] = lambda case: True) -> Case:
    """``base`` (a case of ``graph``, no schedule yet) with how the campaign
    scheduled it: ``choice``, which gave ``order`` (as run), ``seed`` being the
    case's. A user's scheduler is recorded with the seed it was called with
    (replay calls it again: the case tests the user's code); else ``order`` is
    stored when it is legal on the correct compiler and the case ``keeps``
    (reproduces, for a finding), else a built-in scheduler and its seed when
    that case ``keeps``, else ``base``. A scheduler's case records its order
    too, as given (``_as_given``)."""
    whole = None if order is None else whole_order(graph, tuple(n for n in order if n in graph.node_by_name))
    by_scheduler = None
    if choice is not None and choice.source is ScheduleSource.SCHEDULER and choice.scheduler is not None:
        by_scheduler = replace(base, scheduler=choice.scheduler, scheduler_seed=seed if choice.seed is None else choice.seed,
                               scheduler_order=_as_given(graph, order))
        if is_plugin(choice.scheduler):
            return by_scheduler
    if whole is not None and legal_on_correct_compiler(graph, whole):
        with_order = replace(base, schedule=whole)
        if keeps(with_order):
            return with_order
    if by_scheduler is not None and keeps(by_scheduler):
        return by_scheduler
    return base


def _as_given(graph: Graph, order: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """A scheduler's order as it gave it, the private copies that break save
    cycles included (so that an SCH-1 message's steps are the drawn order's),
    less any name that is a node of neither the graph nor the graph it was given."""
    if order is None:
        return None
    known = set(graph.node_by_name) | set(scheduled_graph(graph).node_by_name)
    return tuple(n for n in order if n in known)


def _target_record(config: CampaignConfig, finding: Finding) -> TargetRecord | None:
    """What a target case records: the target, its configurations, the failing and passing one."""
    if config.target is None:
        return None
    from refcompiler.targets import resolve_target

    keys = tuple(c.key for c in resolve_target(config.target).configurations())
    failing, passing = finding.configurations or (None, None)
    return TargetRecord(config.target, keys, failing, passing)


def _alone(config: CampaignConfig, doc: dict[str, Any], sig: Signature) -> str | None:
    """Why the stored case of a user's plug-in, which reproduced in this
    process, does not in a fresh one, as ``refc replay`` replays it: the
    plug-in's answer depended on more than the case (state it kept from the
    campaign's earlier calls, such as orders memoised by the graph's name, or
    its own randomness). ``None`` when it reproduces there, or when no answer
    came before the chunk's time was up (then this process's replay stands)."""
    try:
        limit, _ = _limit(config)
        again = fresh_signature(doc, config.mutant, limit)
    except CaseCut:
        return None
    except NoAnswer as e:
        return f"replaying the stored case in a fresh process (as refc replay does): {e}"
    if again == "timeout" or again == sig.to_doc():
        return None
    found = "nothing" if again is None else str(Signature(**{**again, "kinds": tuple(again["kinds"])}))  # type: ignore[arg-type, dict-item]
    return (f"replaying the stored case in a fresh process (as refc replay does) finds {found}: the plug-in's answer "
            "depends on more than the case (state kept from earlier calls in the campaign's process, or randomness)")


def _reproduces(config: CampaignConfig, case: Case, sig: Signature) -> bool:
    try:
        again = _replay(config, case, config.mutant)
    except CaseCut:
        return False
    return again is not None and again.signature == sig


class CaseCut(Exception):
    """A case was still being checked when the chunk running it had to end
    (``ChunkState.end``: the campaign's time, grace included, was up): not a
    finding, since it had not run ``--case-seconds``; the chunk ends and the
    campaign reports it (the message says where the case was: a hang in a
    user's scheduler or pass shows there)."""


def _limit(config: CampaignConfig) -> tuple[float | None, bool]:
    """One oracle call's time limit: ``--case-seconds``, or the time left to
    the chunk running in this process (``ChunkState.end``) when that is less;
    and whether it is the chunk's end that limits. SIGALRM works in a main
    thread only: a chunk run by a thread executor is not limited."""
    if threading.current_thread() is not threading.main_thread():
        return None, False
    state = running()
    end = None if state is None else state.end
    if end is None:
        return config.case_seconds, False
    left = end - time.time()
    if config.case_seconds is not None and config.case_seconds <= left:
        return config.case_seconds, False
    if left <= 0:
        raise CaseCut(f"a case was left unchecked: the campaign's time was up (budget + --shrink-grace + {HARD_GRACE:g} s)")
    return left, True


def _cut(e: CaseTimeout, started: float) -> CaseCut:
    took = time.time() - started
    return CaseCut(f"a case was still running{e.place} after {took:.1f} s when the campaign's time was up "
                   f"(budget + --shrink-grace + {HARD_GRACE:g} s; a case may take --case-seconds before it is a timeout finding)")


def timeout_finding(e: CaseTimeout) -> Finding:
    """What a case that ran past ``--case-seconds`` is reported as (under the
    schedule and pipeline it struck, when it struck one). One that struck in a
    user's scheduler or pass is that component's, at ``compile`` (as what it
    raises would be), and says where in its code it was."""
    schedule = e.schedule if isinstance(e.schedule, ScheduleChoice) else None
    if e.within is not None:
        what, blame = e.within
        return Finding(Stage.COMPILE, None, f"timeout in {what}: {e} (--case-seconds)", pipeline=e.pipeline, schedule=schedule, blame=blame)
    return Finding(Stage.EXECUTE, None, f"timeout: {e} (--case-seconds)", pipeline=e.pipeline, schedule=schedule)


def check_within(
    config: CampaignConfig, case: Case, *, seed: int, target: Bug | None, focus: Finding | None, carry: Carry | None = None
) -> CaseReport:
    """``check_case`` of ``case`` as the campaign checks it (its mutant,
    schedulers, symbolic stage and target), within ``config.case_seconds``:
    past it, the report's finding is a timeout, if ``target`` is one (a shrink
    attempt that times out does not fail the way another bug does), and
    nothing is counted. Every oracle call of a chunk, its shrinking and its
    reducer goes through here, so that no case (a user's scheduler that
    hangs, say) holds a campaign past its limit. ``CaseCut`` when the chunk's
    end (``ChunkState.end``) comes first: a shrink or reduction attempt is then
    taken as not failing. ``carry``: the chunk's (``check_case``). The caches
    of graph and program objects are emptied after each case
    (``refcompiler.memos.forget``): what it made dies with it; not in a
    campaign over one graph (``carry``), whose cases share that graph's
    objects (emptied there, it ran 20% slower)."""
    started = time.time()
    try:
        limit, cut = _limit(config)
        with time_limit(limit):
            return check_case(case, mutant=config.mutant, schedulers=config.schedulers, seed=seed, target=target,
                              focus=focus, symbolic=config.symbolic, compiler=config.target, carry=carry)
    except CaseCut:
        if target is not None:
            return CaseReport(None, 0)
        raise
    except CaseTimeout as e:
        if cut:
            if target is not None:
                return CaseReport(None, 0)
            raise _cut(e, started) from None
        found = timeout_finding(e)
        return CaseReport(found if target is None or found.signature.matches(target) else None, 0)
    finally:
        if carry is None:
            memos.forget()


def _replay(config: CampaignConfig, case: Case, mutant: str | None) -> Finding | None:
    """``replay`` of a stored case, within ``config.case_seconds`` (a timeout
    is the timeout finding); ``CaseCut`` when the chunk's end comes first."""
    started = time.time()
    limit, cut = _limit(config)
    try:
        with time_limit(limit):
            return replay(case, mutant=mutant)
    except CaseTimeout as e:
        if cut:
            raise _cut(e, started) from None
        return timeout_finding(e)
