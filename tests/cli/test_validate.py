"""``refc validate``: proved, counterexample (written as a corpus case), inconclusive, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuzz.corpus import load_case
from refcompiler.driver import compile_graph, run_compiled
from refcompiler.mutants import activate
from refcompiler.reference import run_reference
from refcompiler.values import same_bits
from tests.cli.inprocess import refc

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "sgd_momentum.json"
VIEWS = ROOT / "corpus" / "mutant.share-ignore-views.json"


def test_proved_states_its_scope(capsys: pytest.CaptureFixture[str]):
    code, out, _ = refc(capsys, "validate", EXAMPLE, "--pipeline", "O2", "--scheduler", "random", "--seed", "3")
    assert code == 0 and "proved" in out
    assert "for all input values, for this schedule and pipeline, with kernels trusted as uninterpreted functions" in out


def test_json_and_an_explicit_order(capsys: pytest.CaptureFixture[str]):
    order = "y,err,xt,grad,step,save_w,save_v,sq,total,total1,save_loss"
    code, out, _ = refc(capsys, "validate", EXAMPLE, "--order", order, "--runs", "1", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["verdict"] == "proved" and doc["schedule"] == order.split(",") and doc["runs"] == 1


def test_a_counterexample_is_confirmed_and_written_as_a_corpus_case(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    out_file = tmp_path / "found.json"
    code, out, _ = refc(capsys, "validate", VIEWS, "--mutant", "share-ignore-views", "--pipeline", "O2", "--out", out_file)
    assert code == 1 and "counterexample confirmed by concrete execution" in out
    assert "counterexample: counterexample" not in out  # the verdict is said once
    case = load_case(out_file)
    assert case.expect.kind.value == "pass" and case.pipeline == "O2" and case.schedule and case.inputs
    assert case.found_by and case.found_by.startswith("refc validate") and case.mutant == "share-ignore-views"
    inputs = {name: init for name, init in case.inputs}
    assert all(init.value is not None for init in inputs.values())
    # the case's own inputs show the miscompile under the mutant, and not without it
    from fuzz.case import case_inputs

    values = case_inputs(case)
    want = run_reference(case.graph, values)
    with activate("share-ignore-views"):
        got = run_compiled(compile_graph(case.graph, pipeline="O2", schedule=case.schedule), values)
    assert any(not same_bits(got[k], want[k]) for k in want)
    assert refc(capsys, "replay", out_file)[0] == 0


def test_a_z3_timeout_is_exit_3_inconclusive(capsys: pytest.CaptureFixture[str]):
    code, out, _ = refc(capsys, "validate", VIEWS, "--mutant", "share-ignore-views", "--pipeline", "O2", "--timeout", "1e-9")
    assert code == 3 and "inconclusive" in out and "unknown" in out and ": proved" not in out


def test_all_schedules_reports_orders_and_programs(capsys: pytest.CaptureFixture[str]):
    code, out, _ = refc(capsys, "validate", ROOT / "examples" / "read_then_save.json", "--all-schedules", "--pipeline", "O2", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["verdict"] == "proved" and doc["enumerated_all"] and doc["legal_orders_covered"] >= doc["distinct_programs"] >= 1
    code, out, _ = refc(capsys, "validate", EXAMPLE, "--all-schedules", "--max-orders", "2")
    assert code == 3 and "covered 2 legal orders" in out and "not all" in out


def test_all_schedules_is_bounded_in_time(capsys: pytest.CaptureFixture[str]):
    """Every order may take a Z3 call of --timeout: 20,000 of them were hours.
    Past --max-seconds (600 by default) no order starts; those left out make
    the verdict inconclusive, never proved."""
    code, out, _ = refc(capsys, "validate", EXAMPLE, "--all-schedules", "--max-seconds", "1e-9", "--json")
    doc = json.loads(out)
    assert code == 3 and doc["verdict"] == "inconclusive" and doc["out_of_time"] and not doc["enumerated_all"]
    code, out, _ = refc(capsys, "validate", EXAMPLE, "--all-schedules", "--max-seconds", "1e-9")
    assert code == 3 and "(the time limit, --max-seconds 1e-09), not all" in out
    code, out, _ = refc(capsys, "validate", EXAMPLE, "--all-schedules", "--json")
    assert code == 0 and json.loads(out)["out_of_time"] is False


def test_all_schedules_gives_the_first_failing_order(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    case = ROOT / "corpus" / "mutant.share-ignore-later-reads.json"
    code, out, _ = refc(capsys, "validate", case, "--mutant", "share-ignore-later-reads", "--pipeline", "O2", "--all-schedules", "--out", tmp_path / "c.json")
    assert code == 1 and "counterexample at legal order" in out and (tmp_path / "c.json").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--order", "a,,b"], "--order"),
        (["--order", "nope"], "SCH-1"),
        (["--runs", "3"], "--runs"),
        (["--timeout", "0"], "--timeout"),
        (["--all-schedules", "--order", "y"], "exclude each other"),
        (["--out", ""], "--out"),
        (["--out", "-"], "--out -: validate writes its counterexample as a case file; name one"),  # it wrote a file named "-"
        # each was accepted and ignored
        (["--all-schedules", "--scheduler", "bogus"], "--all-schedules validates every legal order"),
        (["--max-orders", "5"], "--max-orders and --max-seconds bound --all-schedules"),
        (["--max-seconds", "5"], "--max-orders and --max-seconds bound --all-schedules"),
        (["--no-mutant", "--mutant", "inplace-stencil"], "--mutant and --no-mutant exclude each other"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str):
    code, _, err = refc(capsys, "validate", EXAMPLE, *argv)
    assert code == 2 and message in err


def test_a_missing_graph_is_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    code, _, err = refc(capsys, "validate", tmp_path / "none.json")
    assert code == 2 and "none.json" in err


def test_the_number_of_terms_is_bounded(capsys: pytest.CaptureFixture[str]):
    code, _, err = refc(capsys, "validate", EXAMPLE, "--max-terms", "50")
    assert code == 2 and "more than 50 terms" in err and "--max-terms" in err


def test_an_out_that_cannot_be_written_is_exit_2_before_any_work(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    code, out, err = refc(capsys, "validate", EXAMPLE, "--out", str(tmp_path))
    assert code == 2 and out == "" and f"cannot write {tmp_path}" in err


def test_help_shows_the_validators_defaults(capsys: pytest.CaptureFixture[str]):
    from refcompiler.symbolic.defaults import DEFAULT_MAX_TERMS, DEFAULT_ORDER_LIMIT, DEFAULT_TIMEOUT
    from refcompiler.symbolic.schedules import validate_all_schedules
    from refcompiler.symbolic.validate import symbolic_reference, validate_compiled

    # the validator's own defaults are the same constants
    assert validate_compiled.__kwdefaults__["timeout"] == DEFAULT_TIMEOUT
    assert symbolic_reference.__kwdefaults__["max_terms"] == DEFAULT_MAX_TERMS
    assert validate_all_schedules.__kwdefaults__["limit"] == DEFAULT_ORDER_LIMIT
    code, out, _ = refc(capsys, "validate", "--help")
    shown = " ".join(out.split())
    assert code == 0
    assert f"(default {DEFAULT_TIMEOUT:g})" in shown and f"(default {DEFAULT_ORDER_LIMIT})" in shown and f"(default {DEFAULT_MAX_TERMS})" in shown

def test_a_corpus_case_is_validated_as_it_records(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    """`refc validate CASE` on a failing case: its pipeline and mutant, as `refc compile`
    and `refc replay` use them (it said 'proved' under O0 and the correct compiler);
    a plug-in the case names needs --allow-plugin; --no-mutant and --pipeline override."""
    case = ROOT / "corpus" / "mutant.share-ignore-later-reads.json"
    code, out, err = refc(capsys, "validate", case)
    assert code == 1 and "counterexample" in out and "as the case records:" in err and "mutant share-ignore-later-reads" in err
    code, out, _ = refc(capsys, "validate", case, "--no-mutant")
    assert code == 0 and "proved" in out and "pipeline O2)" in out
    doc = json.loads(case.read_text())
    doc.update(pipeline="my_walk_passes:PIPELINE", mutant=None)
    (tmp_path / "plug.json").write_text(json.dumps(doc))
    code, _, err = refc(capsys, "validate", tmp_path / "plug.json")
    assert code == 2 and "--allow-plugin my_walk_passes" in err
    code, out, _ = refc(capsys, "validate", tmp_path / "plug.json", "--pipeline", "O0")
    assert code == 0 and "pipeline O0)" in out


def test_a_counterexample_case_names_the_nodes_the_compiler_dropped_and_replays(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    # the mutant drops the unread profile node: its compiled order lacks it, and the case's schedule did too (replay: malformed)
    out_file = tmp_path / "c.json"
    code, _, _ = refc(capsys, "validate", ROOT / "examples" / "quantization_profile.json", "--mutant", "dce-drop-stateful",
                      "--pipeline", "O2", "--out", out_file)
    assert code == 1
    case = load_case(out_file)
    assert sorted(case.schedule) == sorted(n.name for n in case.graph.nodes)
    code, out, _ = refc(capsys, "replay", out_file, "--mutant", "dce-drop-stateful")
    assert code == 0 and f"{out_file}: ok: kills dce-drop-stateful" in out


def test_a_long_order_is_listed_in_part_on_its_line_and_whole_in_json(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    # a 50,000-node graph's schedule made one line of half a megabyte
    nodes = [{"name": f"r{i}", "op": "relu", "inputs": [f"r{i - 1}" if i else "A"]} for i in range(100)]
    nodes.append({"name": "s", "op": "save", "inputs": ["r99"], "attrs": {"target": "P"}})
    storage = [{"name": n, "kind": "placeholder", "dtype": "float32", "shape": [2]} for n in ("A", "P")]
    path = tmp_path / "chain.json"
    path.write_text(json.dumps({"format": "refc-graph/1", "name": "chain", "storage": storage, "nodes": nodes}))
    code, out, _ = refc(capsys, "validate", path)
    assert code == 0 and "(schedule r0,r1," in out and ",r63,... and 37 more (all of them: --json); pipeline O0)" in out, out
    code, out, _ = refc(capsys, "validate", path, "--json")
    assert code == 0 and len(json.loads(out)["schedule"]) == 101


def test_a_counterexample_that_cannot_be_written_names_the_file(capsys: pytest.CaptureFixture[str]):
    code, out, err = refc(capsys, "validate", VIEWS, "--mutant", "share-ignore-views", "--pipeline", "O2", "--out", "/dev/full")
    assert code == 2 and err.endswith("\nrefc validate: cannot write /dev/full: No space left on device\n"), err
