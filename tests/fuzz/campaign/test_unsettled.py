"""What the symbolic stage neither proves nor refutes is carried through a
campaign (not a finding): the oracle's report lists it with its pipeline and
schedule, a chunk counts it and keeps its case, and the summary keeps the
first of distinct kinds, whichever chunk ends first."""

from __future__ import annotations

from dataclasses import replace

from fuzz.campaign import CampaignConfig
from fuzz.campaign.chunk import ChunkResult
from fuzz.campaign.summary import Summary
from fuzz.campaign.unsettled import MAX_KEPT, UnsettledCase, unsettled_case
from fuzz.case import PASS, Case, case_from_doc
from fuzz.oracle import Unsettled, check_case
from fuzz.schedules import ScheduleChoice, ScheduleSource
from refcompiler.graph_json import graph_from_doc
from refcompiler.ir import Opcode, OperandKind
from specs import OpKind

PIPELINE = f"{__name__}:swap_add"

# add(a, b) and add(b, a) differ in bits only for two NaNs of different payloads (the result keeps
# the first's), which no concretisation draws: Z3 finds values where the terms differ (the kernels
# are uninterpreted functions), and the concrete run on them agrees
ADD = {"format": "refc-graph/1", "name": "add",
       "storage": [{"name": "a", "kind": "placeholder", "dtype": "float32", "shape": [2], "init": {"seed": 1}},
                   {"name": "b", "kind": "placeholder", "dtype": "float32", "shape": [2], "init": {"seed": 2}},
                   {"name": "o", "kind": "placeholder", "dtype": "float32", "shape": [2]}],
       "nodes": [{"name": "m", "op": "add", "inputs": ["a", "b"]},
                 {"name": "s", "op": "save", "inputs": ["m"], "attrs": {"target": "o"}}]}


def _swapping(op: OpKind):
    def swap(program):
        """A user's pass that takes ``op`` as commutative (its two inputs swapped)."""
        out = []
        for instr in program.instrs:
            if instr.opcode is Opcode.KERNEL and instr.op is op:
                ins = [o for o in instr.operands if o.kind is OperandKind.IN]
                instr = replace(instr, operands=tuple([o for o in instr.operands if o.kind is not OperandKind.IN] + ins[::-1]))
            out.append(instr)
        return program.with_instrs(out)

    return swap


swap_add, swap_max = _swapping(OpKind.ADD), _swapping(OpKind.MAX)


def test_a_difference_only_signed_zeros_show_is_confirmed_not_left_unsettled():
    # max(+0, -0) is +0 and max(-0, +0) is -0: distinct normal values never confirmed the model's
    # difference (it was left unsettled); the concretisations now try signed zeros too
    doc = {**ADD, "nodes": [{**ADD["nodes"][0], "op": "max"}, ADD["nodes"][1]]}
    report = check_case(Case(graph_from_doc(doc), PASS, f"{__name__}:swap_max"), schedulers=("topo",), symbolic=True)
    assert report.finding is not None and report.finding.invariant == "SEM-1" and not report.unsettled
    assert "counterexample confirmed by concrete execution" in report.finding.explanation


def test_the_oracle_reports_what_the_symbolic_stage_left_unsettled_with_its_pipeline_and_schedule():
    report = check_case(Case(graph_from_doc(ADD), PASS, PIPELINE), schedulers=("topo",), symbolic=True)
    assert report.finding is None and report.unsettled
    first = report.unsettled[0]
    assert first.pipeline == PIPELINE and first.schedule.scheduler == "topo" and first.order == ("m", "s")
    assert "concrete run agrees" in first.reason and first.difference == "run 1: o[0]"


def test_an_unsettled_case_compiles_the_same_program_again_and_is_no_finding():
    u = Unsettled(PIPELINE, ScheduleChoice(ScheduleSource.SCHEDULER, None, "topo"), ("m", "s"), "why", "run 1: o[0]")
    config = CampaignConfig(mutant="sched-drop-save-war", pipeline=PIPELINE)
    kept = unsettled_case(config, graph_from_doc(ADD), PASS, 7, u)
    case = case_from_doc(kept.case_doc)
    assert (case.schedule, case.pipeline, case.mutant, case.finding) == (("m", "s"), PIPELINE, None, None)
    assert kept.to_doc() == {"pipeline": PIPELINE, "schedule": "the topo scheduler's order", "order": ["m", "s"],
                             "reason": "why", "difference": "run 1: o[0]", "nodes": 2}


def test_an_unsettled_case_of_a_user_s_scheduler_records_it_and_its_order_as_given_less_unknown_names():
    # what a finding's case records (fuzz.campaign.failure.scheduled_case): the order was stored unfiltered
    u = Unsettled(PIPELINE, ScheduleChoice(ScheduleSource.SCHEDULER, None, "mine:schedule"), ("m", "junk", "s"), "why")
    case = case_from_doc(unsettled_case(CampaignConfig(pipeline=PIPELINE), graph_from_doc(ADD), PASS, 7, u).case_doc)
    assert (case.schedule, case.scheduler, case.scheduler_seed, case.scheduler_order) == (None, "mine:schedule", 7, ("m", "s"))


def _kept(reason: str) -> UnsettledCase:
    return UnsettledCase(Unsettled("O2", None, None, reason), {}, 1)


def _result(index: int, programs: int, *reasons: str) -> ChunkResult:
    return ChunkResult(index, 10, 0, 10, 0, (), 1.0, unsettled=programs, unsettled_cases=len(reasons),
                       unsettled_kept=tuple(_kept(r) for r in reasons))


def test_the_summary_counts_them_and_keeps_the_first_of_each_kind_whichever_chunk_ends_first():
    results = [_result(1, 3, "b", "c"), _result(0, 2, "a", "b"), _result(2, 9, *"defghij")]
    docs = []
    for order in (results, results[::-1]):
        summary = Summary(CampaignConfig())
        for r in order:
            summary.absorb(r)
        docs.append(summary.to_doc()["symbolic_inconclusive"])
    assert docs[0] == docs[1]
    assert (docs[0]["programs"], docs[0]["cases"]) == (14, 11)
    assert [k["reason"] for k in docs[0]["kept"]] == list("abcdefghij")[:MAX_KEPT]
    assert all(k["case"] is None and k["validate"] is None for k in docs[0]["kept"])  # no file written yet


def test_a_summary_without_any_says_so():
    assert Summary(CampaignConfig()).to_doc()["symbolic_inconclusive"] == {"programs": 0, "cases": 0, "kept": []}
