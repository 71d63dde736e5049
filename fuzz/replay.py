"""Replaying a corpus case as data (DESIGN §10): a verdict per case.

A case file is data. The only code a case can name is a plug-in, a
``module:attribute`` pipeline item (or scheduler); ``plugin_modules`` lists
the modules, and ``judge`` is called on such a case only once the caller
allowed them (``refc replay --allow-plugin MODULE`` runs it in a child
process, see ``refc.cli.replay``); a plug-in that cannot be loaded there (its
module is not on the path) is ``needs plug-in``, not a regression of the case. Everything else in a case is checked before anything
runs: its pipeline names, its mutant name, and that a stored schedule is a
legal order of exactly its nodes.

Verdicts: ``ok`` (every recorded expectation holds: it passes, or is rejected
with its id, and a case recorded with ``"mutant": NAME`` still fails with
that mutant active), ``regressed`` (one does not hold), ``malformed`` (the
case cannot be checked as written) and ``needs plug-in``.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from refcompiler.errors import ExecutionError, LimitExceeded, RefCompilerError, UsageError
from refcompiler.graph import Graph
from refcompiler.limits import clipped, shown
from refcompiler.mutants import CATALOG
from refcompiler.passes import resolve_pipeline
from refcompiler.schedulers import SCHEDULERS
from refcompiler.targets import BUILTIN

from fuzz.case import Case, ExpectKind

if TYPE_CHECKING:
    from fuzz.oracle.finding import CaseReport, Finding

__all__ = ["Verdict", "Outcome", "plugin_modules", "case_problem", "plugin_problem", "order_problem", "judge", "exit_code"]


class Verdict(enum.Enum):
    OK = "ok"
    REGRESSED = "regressed"
    MALFORMED = "malformed"
    NEEDS_PLUGIN = "needs plug-in"


# a case that cannot be checked as written is bad input (2), a regression a finding (1)
_EXIT = {Verdict.OK: 0, Verdict.REGRESSED: 1, Verdict.MALFORMED: 2, Verdict.NEEDS_PLUGIN: 2}


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    detail: str


def exit_code(verdicts: Counter[Verdict]) -> int:
    """2 if a case was malformed or needs a plug-in, else 1 if one regressed, else 0."""
    present = [_EXIT[v] for v, n in verdicts.items() if n]
    if 2 in present:
        return 2
    return max(present, default=0)


def _specs(case: Case) -> list[str]:
    """The plug-in-capable specs of a case: its pipeline items and, when the
    case type records one, its scheduler."""
    items = [item.strip() for item in case.pipeline.split(",")]
    scheduler = getattr(case, "scheduler", None)
    if isinstance(scheduler, str):
        items.append(scheduler)
    if case.target is not None:  # a target named module:attribute is a plug-in too
        items.append(case.target.spec)
    return items


def plugin_modules(case: Case) -> tuple[str, ...]:
    """The modules the case's ``module:attribute`` specs would import, in order."""
    return tuple(dict.fromkeys(item.partition(":")[0] for item in _specs(case) if ":" in item))


def case_problem(case: Case) -> str | None:
    """Why ``case`` cannot be checked as written, or ``None``. Imports nothing."""
    for item in (i.strip() for i in case.pipeline.split(",")):
        if ":" not in item:
            try:
                resolve_pipeline(item)
            except RefCompilerError as e:
                return f"pipeline: {e}"
    if case.target is not None and ":" not in case.target.spec and case.target.spec not in BUILTIN:
        return f"target: unknown target {shown(case.target.spec)} (built in: {', '.join(sorted(BUILTIN))})"
    if case.mutant is not None and case.mutant not in CATALOG:
        return f"mutant: unknown mutant {shown(case.mutant)} (known: {', '.join(CATALOG)})"
    scheduler = getattr(case, "scheduler", None)
    if isinstance(scheduler, str) and ":" not in scheduler and scheduler not in SCHEDULERS:
        return f"scheduler: unknown scheduler {shown(scheduler)} (known: {', '.join(SCHEDULERS)}; or module:attribute)"
    if case.schedule is not None:
        return _schedule_problem(case)
    return None


def order_problem(graph: Graph, order: Sequence[str]) -> str | None:
    """Why ``order`` is not a permutation of ``graph``'s nodes (SCH-1), or ``None``."""
    nodes = [n.name for n in graph.nodes]
    known, given = set(nodes), set(order)  # sets: an order as long as the graph is checked in linear time
    dup = [n for n, k in Counter(order).items() if k > 1]
    missing = [n for n in nodes if n not in given]
    unknown = [n for n in order if n not in known]
    for what, names in (("names no node", unknown), ("names a node twice", dup), ("misses", missing)):
        if names:
            more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
            return f"{what}: {', '.join(shown(n) for n in names[:_SHOWN])}{more}"
    return None


_SHOWN = 8  # names listed in a message about an order; the rest are counted


def _schedule_problem(case: Case) -> str | None:
    from fuzz.oracle import legal_on_correct_compiler  # here: refc compile CASE checks a case without the oracle chain

    order = list(case.schedule or ())
    problem = order_problem(case.graph, order)
    if problem is not None:
        return f"schedule: {problem}"
    if case.expect.kind is ExpectKind.PASS and not legal_on_correct_compiler(case.graph, order):
        return "schedule: not a legal order of the graph's nodes (SCH-1 on the correct compiler)"
    return None


def _over_limits(case: Case) -> str | None:
    """Why the case's graph is beyond refc's resource limits (``LimitExceeded``
    from checking it: a result too large, found by shape inference), or
    ``None``: a file too large to check, as every other command says, not a
    regression of the compiler."""
    from refcompiler.verifier import violations

    try:
        violations(case.graph)  # remembered: checking the case again does not repeat it
    except LimitExceeded as e:
        return str(e)
    return None


def plugin_problem(case: Case) -> str | None:
    """Why a plug-in the case names cannot be loaded (its module does not import
    from here, the attribute is missing or is no pipeline, scheduler or target),
    or ``None``. Imports the plug-in modules: call it only once they are allowed."""
    from refcompiler.schedulers import resolve_scheduler
    from refcompiler.targets import resolve_target

    scheduler = getattr(case, "scheduler", None)
    loads = [(resolve_pipeline, case.pipeline)] if any(":" in item for item in case.pipeline.split(",")) else []
    loads += [(resolve_scheduler, scheduler)] if isinstance(scheduler, str) and ":" in scheduler else []
    loads += [(resolve_target, case.target.spec)] if case.target is not None and ":" in case.target.spec else []
    for load, spec in loads:
        try:
            load(spec)
        except UsageError as e:
            return f"needs plug-in {', '.join(plugin_modules(case))}: {e} (replay where the module imports, or put it on PYTHONPATH)"
        except ExecutionError:  # it loads, and its own code fails (a pipeline function that raises): the case's finding
            return None
    return None


def judge(case: Case, *, mutant: str | None = None) -> Outcome:
    """The verdict of a case that names no plug-in, or one the caller allowed.

    Without ``mutant``: every recorded expectation. With ``mutant``: whether
    the case kills it; a case recorded against that mutant that no longer
    kills it is ``regressed``, any other case is ``ok`` either way."""
    from fuzz.oracle import check_case

    problem = case_problem(case) or _over_limits(case)
    if problem is not None:
        return Outcome(Verdict.MALFORMED, problem)
    unloadable = plugin_problem(case)
    if unloadable is not None:  # not a finding of the case: checking it would blame the compiler for a setup problem
        return Outcome(Verdict.NEEDS_PLUGIN, unloadable)
    if mutant is not None:
        kills = check_case(case, mutant=mutant).finding is not None
        if kills:
            return Outcome(Verdict.OK, f"kills {mutant}")
        if case.mutant == mutant:
            return Outcome(Verdict.REGRESSED, f"no longer kills {mutant}")
        return Outcome(Verdict.OK, f"does not kill {mutant}")
    report = check_case(case)
    finding = report.finding
    if finding is not None:
        on = f" on target {case.target.spec}" if case.target is not None else ""
        return Outcome(Verdict.REGRESSED, f"expected {case.expect}{on}: {finding}{_unlike_recorded(case, finding)}")
    if case.mutant is None:
        unstable = _unstable_scheduler(case, report)
        if unstable:
            return Outcome(Verdict.REGRESSED, f"{case.expect} this time, but {unstable}")
        return Outcome(Verdict.OK, f"{case.expect}{_order_changed(case, report)}")
    killed = check_case(case, mutant=case.mutant).finding
    if killed is None:
        return Outcome(Verdict.REGRESSED, f"{case.expect}, but no longer kills its mutant {case.mutant}")
    return Outcome(Verdict.OK, f"{case.expect}, kills {case.mutant}{_unlike_recorded(case, killed, now=True)}")


ASKED_AGAIN = 4  # times replay asks a case's scheduler again for its order


def _unstable_scheduler(case: Case, report: CaseReport) -> str:
    """Why the case's scheduler cannot be vouched for, when asked again for the
    graph with the recorded seed it gives another order than the check just
    checked (a scheduler that shuffles with its own randomness: the bug the
    case records may show only sometimes, and a replay that passed says
    nothing); empty otherwise."""
    from refcompiler.driver import prepare, scheduler_order
    from refcompiler.schedulers import resolve_scheduler

    from fuzz.schedules import is_plugin  # here: fuzz.schedules loads Z3, which the commands that build this parser need not

    if not is_plugin(case.scheduler) or case.expect.kind is not ExpectKind.PASS:  # a built-in one is a function of them
        return ""
    seed = case.scheduler_seed or 0
    first = report.scheduler_orders.get((case.scheduler, seed))
    if first is None:  # not asked (a graph that is all dead code)
        return ""
    prepared, scheduler = prepare(case.graph), resolve_scheduler(case.scheduler)
    for _ in range(ASKED_AGAIN):  # a shuffle of a few nodes may give the same order once by chance
        try:
            again = scheduler_order(prepared, scheduler, seed)
        except RefCompilerError as e:
            return f"{clipped(case.scheduler, 200)}, asked again for the same graph and seed {seed}, failed: {clipped(str(e), 300)}"
        if again != first:
            break
    else:
        return ""
    return (f"{clipped(case.scheduler, 200)} gave another order when asked again for the same graph and seed {seed} "
            f"({clipped(' '.join(first), 200)}, then {clipped(' '.join(again), 200)}): a scheduler must be a function of "
            "the graph and the seed, or the bug the case records shows only sometimes")


def _order_changed(case: Case, report: CaseReport) -> str:
    """A note when the case's scheduler, asked with its recorded seed by the
    check that passed (``report``'s answer, the order checked; one that
    answers otherwise when asked again is ``_unstable_scheduler``'s), ordered
    the graph otherwise than the recorded
    ``scheduler_order``: fixed, or an order that depends on more than the
    graph and the seed (a set's iteration order differs from process to
    process), which a pass may then owe to luck; empty otherwise."""
    if case.scheduler is None or case.scheduler_order is None or case.expect.kind is not ExpectKind.PASS:
        return ""
    now = report.scheduler_orders.get((case.scheduler, case.scheduler_seed or 0))
    if now is None:  # not asked (a graph that is all dead code)
        return ""
    nodes = case.graph.node_by_name  # (a case recorded before orders kept their private copies has none)
    if [n for n in case.scheduler_order if n in nodes] == [n for n in now if n in nodes]:
        return ""
    return (f" (but {clipped(case.scheduler, 200)} now orders the graph otherwise than when the case was recorded: fixed, "
            "or its order depends on more than the graph and the seed)")


def _unlike_recorded(case: Case, finding: Finding, *, now: bool = False) -> str:
    """`` (recorded as S)`` when the case records a finding (``Case.finding``)
    whose signature ``S`` is not ``finding``'s: the bug shows another way than
    when the case was found (a fix of part of it, a checker that now sees it
    sooner); empty otherwise. ``now``: name ``finding``'s signature too."""
    if case.finding is None or case.finding.signature == str(finding.signature):
        return ""
    recorded = clipped(case.finding.signature, 200)  # a file's text: no control character reaches the terminal
    return f" ({f'now as {finding.signature}, ' if now else ''}recorded as {recorded})"
