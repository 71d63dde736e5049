"""The target stage catches each planted wrong target with its invariant, and
passes a correct one; the default chain does not include it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.oracle import check_case
from fuzz.oracle.chain import CHAIN, target_chain
from fuzz.oracle.finding import Stage
from refcompiler.graph_json import load_graph

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples").glob("*.json"))
SGD = load_graph(Path(__file__).resolve().parents[3] / "examples" / "sgd_momentum.json")
FAKE = "tests.refcompiler.targets.fake_targets:"


def finding(spec: str, graph=SGD, *, isolate: bool = False):
    return check_case(graph, compiler=spec, isolate=isolate).finding


@pytest.mark.parametrize(
    "name, invariant, words",
    [
        ("ALIASING", "TGT-3", "returned 'w' of run 1 changed by a later run"),
        ("CORRUPTS_PREVIOUS", "TGT-3", "changed by a later run"),
        ("WRITES_INPUT", "TGT-3", "input 'x' of run 1"),
        ("ONE_CONFIG_OFF", "TGT-2", "reuse differs from base"),
        ("WRONG", "TGT-1", "base differs from the reference"),
        ("RAISES", "TGT-4", "planted failure"),
    ],
)
def test_each_planted_wrong_target_is_caught(name, invariant, words):
    f = finding(FAKE + name)
    assert f is not None and f.stage is Stage.TARGET and f.invariant == invariant, f
    assert words in f.explanation
    assert f.location.nodes and set(f.kinds) <= {n.op.value for n in SGD.nodes}


def test_a_crash_in_the_child_process_is_a_finding_not_a_dead_fuzzer():
    f = finding(FAKE + "SEGFAULTS", isolate=True)
    assert f.invariant == "TGT-4" and "crash" in f.explanation and "SIGSEGV" in f.explanation


def test_a_correct_or_refusing_target_has_no_finding():
    assert finding(FAKE + "REFERENCE") is None
    assert finding(FAKE + "REFUSES") is None


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_onnxruntime_passes_the_examples(path):
    assert finding("onnxruntime", load_graph(path), isolate=True) is None


def test_the_target_chain_is_verify_reference_target_and_the_default_chain_has_no_target():
    assert [s.name for s in target_chain(FAKE + "REFERENCE")] == [Stage.VERIFY, Stage.REFERENCE, Stage.TARGET]
    assert Stage.TARGET not in {s.name for s in CHAIN}


def test_a_whole_target_failure_is_one_bug_per_failing_configuration_whatever_the_ops():
    other = load_graph(EXAMPLES[0])
    assert {n.op for n in other.nodes} != {n.op for n in SGD.nodes}
    a, b = finding(FAKE + "RAISES"), finding(FAKE + "RAISES", other)
    assert a.signature == b.signature and a.signature.blame == "base" and a.location.site == ()
    assert a.configurations == ("base", None)
    # a discrepancy in one storage keeps the op kinds behind it, and blames the configuration
    off = finding(FAKE + "ONE_CONFIG_OFF")
    assert off.signature.blame == "reuse" and off.location.site is None and off.configurations == ("reuse", "base")


def test_owned_state_written_in_place_is_one_bug_whatever_op_owns_it():
    # it was one finding per owner kind: [accumulate], [embedding_update], [quantization_profile]
    owners = {path.stem: load_graph(path) for path in EXAMPLES if path.stem in ("embedding_update", "quantization_profile")}
    found = {name: finding(FAKE + "WRITES_STATE", graph) for name, graph in owners.items()}
    sigs = {str(f.signature) for f in found.values()}
    assert sigs == {"TGT-3 at target by base"}, sigs
    assert all(f.location.nodes and f.location.site == () for f in found.values())
