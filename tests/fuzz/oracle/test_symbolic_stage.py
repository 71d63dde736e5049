"""The symbolic stage in the oracle chain (DESIGN §7.4): with the concrete
differential switched off, it alone catches every catalog mutant that
changes the compiled program on that mutant's corpus case, with a confirmed
counterexample; it finds nothing on correct programs; it is off when asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.case import case_inputs
from fuzz.corpus import load_case
from fuzz.oracle.chain import CHAIN, iter_findings
from fuzz.oracle.context import GraphContext, RunContext, reference_runs
from fuzz.oracle.finding import Stage
from fuzz.oracle.stages import compile_run, proof, reference, symbolic, verify
from fuzz.schedules import ScheduleChoice, ScheduleSource
from refcompiler.driver import compile_graph
from refcompiler.graph_json import load_graph

ROOT = Path(__file__).resolve().parents[3]
NO_DIFFERENTIAL = (verify.STAGE, reference.STAGE, proof.STAGE, compile_run.STAGE, symbolic.STAGE)

# The mutants whose compiled program is wrong only in its values (no static
# stage sees them): the symbolic stage must catch each on its corpus case.
VALUE_MUTANTS = ("dce-drop-stateful", "dse-drop-state-write", "inplace-stencil", "share-ignore-later-reads", "share-ignore-views")


def _first(case, chain, symbolic):
    ctx = GraphContext(case.graph, case.expect, case.mutant, 0, case_inputs(case), symbolic=symbolic)
    choices = [ScheduleChoice(ScheduleSource.GIVEN, case.schedule)] if case.schedule else [ScheduleChoice(ScheduleSource.SCHEDULER, None, "topo")]
    return next(iter_findings(ctx, choices, ["O0", case.pipeline], chain), None), ctx


def test_the_stage_is_in_the_chain_after_the_differential():
    names = [s.name for s in CHAIN]
    assert names.index(Stage.SYMBOLIC) == names.index(Stage.DIFFERENTIAL) + 1


@pytest.mark.parametrize("mutant", VALUE_MUTANTS)
def test_symbolic_stage_alone_catches_value_mutants(mutant):
    case = load_case(ROOT / "corpus" / f"mutant.{mutant}.json")
    found, _ = _first(case, NO_DIFFERENTIAL, symbolic=True)
    assert found is not None and found.stage is Stage.SYMBOLIC and found.invariant == "SEM-1", found
    assert "departs from the reference" in found.explanation
    # switched off, nothing else in this chain sees the bug
    off, _ = _first(case, NO_DIFFERENTIAL, symbolic=False)
    assert off is None


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.json")), ids=lambda p: p.stem)
def test_correct_programs_give_no_symbolic_finding(path):
    graph = load_graph(path)
    ctx = GraphContext(graph, symbolic=True)
    choices = [ScheduleChoice(ScheduleSource.SCHEDULER, None, s) for s in ("topo", "memory", "random")]
    assert next(iter_findings(ctx, choices, ["O0", "O2"]), None) is None
    # each distinct program is validated once, however many schedules give it
    assert 1 <= len(ctx.symbolic_seen) <= 6


def test_default_is_on_for_small_graphs_only():
    graph = load_graph(ROOT / "examples" / "sgd_momentum.json")
    assert GraphContext(graph).symbolic_enabled
    assert not GraphContext(graph, symbolic=False).symbolic_enabled
    from refcompiler.proofs.scale import large_graph

    assert not GraphContext(large_graph(200, seed=0)).symbolic_enabled



def test_a_program_seen_again_is_not_validated_again(monkeypatch: pytest.MonkeyPatch):
    calls: list[object] = []
    real = symbolic.validate_compiled
    monkeypatch.setattr(symbolic, "validate_compiled", lambda graph, compiled, **kw: calls.append(compiled) or real(graph, compiled, **kw))
    graph = load_graph(ROOT / "examples" / "sgd_momentum.json")
    g = GraphContext(graph, symbolic=True)
    choice = ScheduleChoice(ScheduleSource.SCHEDULER, None, "topo")
    for pipeline in ("O0", "O0", "O2", "O0"):
        compiled = compile_graph(graph, pipeline=pipeline)  # a new, equal program each time
        run = RunContext(g, choice, pipeline, compiled=compiled, order=compiled.schedule, got=reference_runs(graph))
        assert symbolic.check(run) is None
    assert [c.program.passes for c in calls] == [compile_graph(graph, pipeline=p).program.passes for p in ("O0", "O2")]


@pytest.mark.parametrize("unknown", [True, False])
def test_a_program_z3_gave_no_answer_for_is_validated_again_by_a_later_case_only(monkeypatch: pytest.MonkeyPatch, unknown):
    """Z3's silence (``Validation.unknown``: a timeout, which load decides) is
    the case's own: a later case carried from it (``GraphContext.carried``)
    tries that program again; an inconclusive verdict of the program alone (a
    difference the concrete run does not confirm) is carried. Within one case
    neither is validated twice."""
    from refcompiler.symbolic.validate import Validation, Verdict

    calls: list[object] = []
    answer = Validation(Verdict.INCONCLUSIVE, "no answer in time" if unknown else "the concrete run agrees", 2, (), unknown=unknown)
    monkeypatch.setattr(symbolic, "validate_compiled", lambda graph, compiled, **kw: calls.append(compiled) or answer)
    graph = load_graph(ROOT / "examples" / "sgd_momentum.json")
    g = GraphContext(graph, symbolic=True)
    choice = ScheduleChoice(ScheduleSource.SCHEDULER, None, "topo")
    compiled = compile_graph(graph)
    for ctx in (g, g, g.carried(1)):
        run = RunContext(ctx, choice, "O0", compiled=compiled, order=compiled.schedule, got=reference_runs(graph))
        assert symbolic.check(run) is None
    assert len(calls) == (2 if unknown else 1) and len(g.symbolic_inconclusive) == 1
