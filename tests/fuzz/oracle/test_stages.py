"""The oracle chain: each stage reports what it is built to catch, with the
right invariant id, and nothing on a correct compiler."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

import fuzz.oracle.context as context
import fuzz.oracle.stages.compile_run as compile_run
from refcompiler.errors import InvariantViolation, LimitExceeded
from refcompiler.graph import Init
from refcompiler.graph_json import graph_from_doc, load_graph
from refcompiler.driver import scheduled_graph
from refcompiler.proofs import all_legal_orders
from refcompiler.variants import _active

from fuzz.case import PASS, Case, reject
from fuzz.oracle import CRASH, Signature, Stage, check, check_case, check_rejected
from fuzz.schedules import EXHAUSTIVE_LIMIT, ScheduleChoice, ScheduleSource
from fuzz.strategies import graphs, invalid_graphs

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))


def _graph(nodes, storage):
    return graph_from_doc({"format": "refc-graph/1", "name": "t", "storage": storage, "nodes": nodes})


def _placeholder(name, shape=(4,), seed=1):
    return {"name": name, "kind": "placeholder", "dtype": "float32", "shape": list(shape), "init": {"seed": seed}}


READ_THEN_SAVE = ROOT / "examples" / "read_then_save.json"


def backwards(graph, deps, seed):
    """A user's scheduler that is wrong: creation order reversed."""
    return [n.name for n in reversed(graph.nodes)]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_examples_pass_every_stage(path):
    graph = load_graph(path)
    report = check_case(graph, schedulers=("topo", "memory", "random"))
    assert report.finding is None
    # a schedule counts once per distinct order: every legal order of a small graph
    orders = len(list(all_legal_orders(scheduled_graph(graph), limit=EXHAUSTIVE_LIMIT + 1)))
    assert report.schedules == orders if orders <= EXHAUSTIVE_LIMIT else report.schedules >= 2


@settings(max_examples=15)
@given(graphs(max_nodes=6))
def test_generated_graphs_pass_on_the_reference_compiler(graph):
    # the property a campaign checks at scale; known compiler bugs are corpus cases
    finding = check_case(graph).finding
    assert finding is None or finding.stage is not Stage.VERIFY, finding


@settings(max_examples=15)
@given(invalid_graphs("OWN-2"))
def test_invalid_graphs_are_rejected_with_their_id(graph):
    assert check_case(Case(graph, reject("OWN-2"))).finding is None


# -- static ------------------------------------------------------------------


def test_a_valid_graph_expected_to_be_rejected_is_a_finding():
    f = check_rejected(load_graph(READ_THEN_SAVE), "OWN-4")
    assert f is not None and f.stage is Stage.VERIFY and f.invariant == "OWN-4"
    assert "accepts" in f.explanation


def _two_saves():
    return _graph(
        [
            {"name": "a", "op": "relu", "inputs": ["x"]},
            {"name": "s1", "op": "save", "inputs": ["a"], "attrs": {"target": "out"}},
            {"name": "s2", "op": "save", "inputs": ["x"], "attrs": {"target": "out"}},
        ],
        [_placeholder("x"), _placeholder("out")],
    )


def test_a_weakened_verifier_is_caught():
    graph = _two_saves()
    assert check_rejected(graph, "OWN-4") is None
    f = check_rejected(graph, "OWN-4", mutant="verify-allow-two-saves")
    assert f is not None and f.kinds == ("save",)
    # an ownership rule is about storage: no op kind in the signature
    assert f.signature == Signature("OWN-4", "verify", ())


def test_a_rejection_with_the_wrong_id_is_a_finding():
    f = check_rejected(_two_saves(), "OWN-2")
    assert f is not None and "rejects with OWN-4" in f.explanation and f.explanation.endswith("not OWN-2")


def test_a_valid_graph_rejected_is_a_finding():
    f = check(_two_saves(), expect=PASS)
    assert f is not None and f.stage is Stage.VERIFY and f.invariant == "OWN-4"


# -- proof and schedules -------------------------------------------------------


def test_an_unordered_conflict_is_a_proof_finding():
    graph = load_graph(READ_THEN_SAVE)
    assert check(graph) is None
    f = check(graph, mutant="sched-drop-save-war")
    assert f is not None and f.stage is Stage.PROOF and f.invariant == "SCH-2"
    assert "save" in f.kinds and f.order is not None


def test_an_illegal_schedule_accepted_is_a_schedule_finding():
    graph = load_graph(READ_THEN_SAVE)
    illegal = ("sum", "s", "late", "save_late")  # the save into A before late reads A
    # the correct compiler rejects it, which is right: no finding
    assert check(graph, illegal, proof=False) is None
    f = check(graph, illegal, mutant="sched-drop-save-war", proof=False)
    assert f is not None and f.stage is Stage.SCHEDULE and f.invariant == "SCH-1"
    assert f.schedule == ScheduleChoice(ScheduleSource.GIVEN, illegal)
    assert f.kinds == ("mul", "save")


def test_a_wrong_user_scheduler_is_a_finding():
    graph = load_graph(READ_THEN_SAVE)
    f = check(graph, scheduler=f"{__name__}:backwards", proof=False)
    assert f is not None and f.invariant == "SCH-1" and f.stage is Stage.COMPILE


def raising_scheduler(graph, deps, seed):
    raise RuntimeError("the scheduler's own bug")


def raising_pass(program):
    raise ValueError("the pass's own bug")


def pass_returning_nothing(program):
    return None


RAISING = [raising_pass]
RETURNING_NOTHING = [pass_returning_nothing]


def test_a_user_scheduler_or_pass_that_fails_is_blamed_by_name():
    """Two plug-ins' failures are two distinct findings, each naming its component
    (as their invariant violations are), and a pass returning no program is a
    finding (exit 1) like a pass that raises, not a usage error."""
    graph = load_graph(READ_THEN_SAVE)
    by_scheduler = check(graph, scheduler=f"{__name__}:raising_scheduler", proof=False)
    by_pass = check(graph, pipeline=f"{__name__}:RAISING", proof=False)
    by_nothing = check(graph, pipeline=f"{__name__}:RETURNING_NOTHING", proof=False)
    assert by_scheduler is not None and by_scheduler.stage is Stage.COMPILE and by_scheduler.blame == f"{__name__}:raising_scheduler"
    assert "raised RuntimeError: the scheduler's own bug" in by_scheduler.explanation
    # as refc replay prints it: whose fault it is, beside the explanation
    assert str(by_scheduler).startswith(f"error at compile by {__name__}:raising_scheduler: ExecutionError: ")
    assert by_pass is not None and by_pass.blame == f"{__name__}.raising_pass" and str(by_pass.signature) == f"error at compile by {__name__}.raising_pass"
    assert by_nothing is not None and by_nothing.blame == f"{__name__}.pass_returning_nothing"
    assert by_nothing.explanation == f"ExecutionError: pass {__name__}.pass_returning_nothing returned NoneType, not a Program"
    assert len({by_scheduler.signature, by_pass.signature, by_nothing.signature}) == 3


# -- dynamic -------------------------------------------------------------------


def test_a_wrong_value_is_a_differential_finding(monkeypatch):
    graph = load_graph(READ_THEN_SAVE)
    real = compile_run.run_compiled_each

    def corrupt(compiled, inputs=None, *, runs=1, bound=None):
        each = real(compiled, inputs, runs=runs, bound=bound)
        out = each[1]  # only the second run: state persistence is checked
        out["out"] = out["out"].copy()
        out["out"][1] = np.nextafter(out["out"][1], np.float32(np.inf))
        return each

    monkeypatch.setattr(compile_run, "run_compiled_each", corrupt)
    f = check(graph, proof=False)
    assert f is not None and f.stage is Stage.DIFFERENTIAL and f.invariant == "SEM-1"
    assert "after run 2" in f.explanation and "'out'" in f.explanation and "[1]" in f.explanation
    assert "; every value agreed after run 1, so run 2 started from the right values" in f.explanation
    assert f.kinds == ("mul", "save")  # the save and the producer of what it saves
    # O0 ran wrong where the reference gets the scheduled graph right: lowering is
    # blamed (``bisect.o0_component``), and the blame is the signature on its own
    assert f.blame == "lowering" and f.signature.kinds == ()


def test_o2_departing_from_o0_is_said(monkeypatch):
    graph = load_graph(READ_THEN_SAVE)
    real = compile_run.run_compiled_each

    def corrupt_o2(compiled, inputs=None, *, runs=1, bound=None):
        each = real(compiled, inputs, runs=runs, bound=bound)
        if compiled.program.passes:
            for out in each:
                out["A"] = -out["A"]
        return each

    monkeypatch.setattr(compile_run, "run_compiled_each", corrupt_o2)
    f = check(graph, pipeline="O2", proof=False)
    assert f is not None and f.pipeline == "O2" and "O0 agrees with the reference" in f.explanation
    # no pass makes it wrong when the passes are run one by one: nothing is blamed
    assert f.blame == "" and "wrong from pass" not in f.explanation and f.signature.kinds


def test_a_sanitizer_report_is_an_execute_finding(monkeypatch):
    def sanitizer(compiled, inputs=None, *, runs=1, bound=None):
        # the location comes from the violation's fields, not from its message
        raise InvariantViolation("IR-2", "reads uninitialised bytes", instruction=3, instruction_name="late")

    monkeypatch.setattr(compile_run, "run_compiled_each", sanitizer)
    f = check(load_graph(READ_THEN_SAVE), proof=False)
    assert f is not None and f.stage is Stage.EXECUTE and f.invariant == "IR-2"
    assert f.kinds == ("mul",)
    assert f.location.nodes == ("late",) and f.location.instruction == 3


# the driver's entry points the compile stage calls: for a given order, and for the scheduler's
@pytest.mark.parametrize("entry, given", [("compile_graph", True), ("compile_order", False), ("scheduler_order", False)])
def test_a_crash_is_a_finding_not_an_abort(monkeypatch, entry, given):
    def crash(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(compile_run, entry, crash)
    graph = load_graph(READ_THEN_SAVE)
    f = check(graph, [n.name for n in graph.nodes] if given else None, proof=False)
    assert f is not None and f.crashed and f.signature.invariant == CRASH and "boom" in f.explanation


@pytest.mark.parametrize("expect", [PASS, reject("OWN-4")])
def test_a_verifier_that_crashes_is_a_finding_on_an_invalid_graph_too(monkeypatch, expect):
    """A structure check under test that lets an input too many through makes
    type inference raise; for a case expected to be rejected that escaped the
    chain (the campaign ended: 'failed outside the oracle')."""
    import refcompiler.verifier as verifier

    def crash(graph):
        raise IndexError("tuple index out of range")

    monkeypatch.setattr(verifier, "check_own4", crash)  # the verifier's code itself, not a swap point
    f = check(_two_saves(), expect=expect, proof=False)
    assert f is not None and f.crashed and f.stage is Stage.VERIFY and "IndexError" in f.explanation


def test_a_case_the_reference_cannot_run_is_reported():
    path = ROOT / "examples" / "embedding_update.json"
    graph = load_graph(path)
    case = Case(graph, inputs=(("ids", Init(value=(0, 1, 2, 3, 9))),))
    f = check_case(case).finding
    assert f is not None and f.stage is Stage.REFERENCE


def test_the_reference_runs_outside_the_mutant(monkeypatch):
    real = context.run_reference
    seen = []

    def spy(*args, **kwargs):
        seen.append(dict(_active.get()))
        return real(*args, **kwargs)

    monkeypatch.setattr(context, "run_reference", spy)
    check(load_graph(READ_THEN_SAVE), mutant="inplace-stencil")
    assert seen and all(s == {} for s in seen)


@pytest.mark.parametrize(
    "mutant, stage",
    [("dse-drop-state-write", Stage.DIFFERENTIAL), ("lower-state-no-writeback", Stage.COMPILE)],
)
def test_state_bugs_are_caught(mutant, stage):
    graph = load_graph(ROOT / "examples" / "quantization_profile.json")
    f = check_case(graph, mutant=mutant).finding
    assert f is not None and f.stage is stage


def test_target_skips_other_findings():
    graph = load_graph(READ_THEN_SAVE)
    first = check_case(graph, mutant="sched-drop-save-war").finding
    assert first is not None and first.stage is Stage.PROOF
    later = check_case(graph, mutant="sched-drop-save-war", target=Signature("SCH-2", "proof", ("nothing",)))
    assert later.finding is None


def test_signature_text_and_slug():
    sig = Signature("SEM-1", "differential", ("add", "save"))
    assert str(sig) == "SEM-1 at differential [add, save]"
    assert sig.slug == "SEM-1.differential.add-save"
    assert Signature("OWN-1", "verify", ()).slug == "OWN-1.verify.none"
    assert Signature("SCH-1", "compile", (), "my_sched:schedule").slug == "SCH-1.compile.my_sched.schedule"


def test_a_slug_is_one_file_name_whatever_a_users_code_is_called():
    # a pass whose __name__ was '../../../evil' had its case written outside cases/
    evil = Signature("error", "compile", (), "../../../evil")
    assert "/" not in evil.slug and evil.slug.startswith("error.compile..._.._.._evil.")
    assert Signature("error", "compile", (), "a/b").slug != Signature("error", "compile", (), "a_b").slug == "error.compile.a_b"
    long = Signature("error", "compile", (), "p" * 1000).slug
    assert len(long) == 200 and long != Signature("error", "compile", (), "p" * 999).slug
    assert Signature("TGT-2", "target", ("add",), "all.mem_pattern=off").slug.startswith("TGT-2.target.all.mem_pattern_off.add.")


def test_a_difference_prints_values_without_numpy_reprs():
    import numpy as np

    from refcompiler.values import first_difference

    text = first_difference(np.array([1.0, 0.0], np.float32), np.array([1.0, 0.34558418], np.float32))
    assert text == "at [1] got 0.0, want 0.34558418"
    nan_a, nan_b = np.array([np.nan], np.float32), np.array([np.nan], np.float32)
    nan_b.view(np.uint32)[0] += 1
    assert "np." not in first_difference(nan_a, nan_b) and "bits" in first_difference(nan_a, nan_b)
    assert first_difference(np.array([3], np.int32), np.array([4], np.int32)) == "at [0] got 3, want 4"


def test_a_graph_beyond_the_resource_limits_is_refused_not_a_crash_finding(monkeypatch):
    """The verifier's shape inference raising LimitExceeded was a 'crash at verify'
    finding: a campaign under a lowered REFC_MAX_BYTES reported refc as broken."""
    monkeypatch.setenv("REFC_MAX_BYTES", "100")
    graph = load_graph(ROOT / "examples" / "sgd_momentum.json")
    with pytest.raises(LimitExceeded, match="REFC_MAX_BYTES"):
        check(graph)
