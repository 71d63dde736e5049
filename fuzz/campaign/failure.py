"""A new failure of a chunk, made small and storable: the graph-level
reducer takes the smallest failing example to a local minimum, and the result
becomes a corpus case that replays."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from refcompiler.graph import Graph

from fuzz.campaign.config import CampaignConfig
from fuzz.case import Case, Expect, ExpectKind, case_to_doc
from fuzz.corpus import replay
from fuzz.oracle import Finding, Signature, check_case, legal_on_correct_compiler
from fuzz.shrink import breaks_only, reduce_graph, valid

__all__ = ["Example", "Failure", "finish"]


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


def finish(config: CampaignConfig, example: Example, found_at: float, stop: Callable[[], bool]) -> Failure:
    """Reduce the smallest failing example (until ``stop()``) and make it a
    corpus case that replays."""
    graph, expect, finding = example.graph, example.expect, example.finding
    sig = finding.signature

    def fails(g: Graph, focus: Finding | None = finding) -> Finding | None:
        case = Case(g, expect, config.pipeline)
        return check_case(case, mutant=config.mutant, schedulers=config.schedulers, seed=example.seed, target=sig, focus=focus, symbolic=config.symbolic, compiler=config.target).finding

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
    found_by = f"refc fuzz --seed {config.seed}" + (f" --mutant {config.mutant}" if config.mutant else "") + (f" --target {config.target}" if config.target else "")
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
