"""The TVM Relax target on small graphs: every example under every configuration
agrees with the others and with the reference; the pipelines hold the passes they
are named after; a planted wrong configuration and a write into an input are
caught; what it refuses; a missing package is exit 2 with the pip command."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from fuzz.oracle.context import reference_runs
from fuzz.strategies.valid import graphs
from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind, freeze_attrs
from refcompiler.graph_json import load_graph
from refcompiler.targets import resolve_target
from refcompiler.targets.base import Refused, execute_all
from refcompiler.targets.tvm_relax import PIPELINES, TARGET, TvmSession, aligned_copy, pipeline_passes, relax_pipeline
from refcompiler.targets.verdict import Kind, judge
from specs import Dtype, OpKind

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
SGD = load_graph(ROOT / "examples" / "sgd_momentum.json")
FAKE = "tests.refcompiler.targets.fake_targets:"


def test_the_configurations_switch_the_in_place_and_memory_planning_passes():
    configs = {c.key: c for c in TARGET.configurations()}
    assert list(configs) == ["default", "memory_plan=off", "inplace", "fused.inplace"]
    assert configs["default"].option("pipeline") == "default"
    off, on, fused = PIPELINES["memory_plan=off"], PIPELINES["inplace"], PIPELINES["fused.inplace"]
    assert "transform.StaticPlanBlockMemory" not in off and "transform.DataflowUseInplaceCalls" not in off
    assert "transform.StaticPlanBlockMemory" in on and on[2] == "transform.DataflowUseInplaceCalls"
    assert "transform.FuseOps" in fused and "transform.FuseOps" not in on
    # the levels: memory decisions promise bits, fusion does not
    assert {c.level for c in configs.values() if c.key != "fused.inplace"} == {"unfused"} != {configs["fused.inplace"].level}


def test_the_pass_names_resolve_and_match_the_default_pipeline():
    import tvm

    seq = relax_pipeline(pipeline_passes(inplace=True, fuse=True, plan=True))
    assert isinstance(seq, tvm.transform.Sequential)
    # tvm 0.27's default_build_pipeline runs these passes, in this order
    default = [p.info.name for p in relax_pipeline(pipeline_passes(False, False, True)).passes]
    assert default[:3] == ["DispatchSampling", "DispatchSortScan", "LegalizeOps"] and default[-1] == "AttachGlobalSymbol"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_agrees_under_every_configuration(path):
    graph = load_graph(path)
    outcome = execute_all(resolve_target("tvm"), graph)
    assert outcome.refused is None and len(outcome.results) == 4
    assert all(r.error is None and len(r.runs) == 2 and not r.changed for r in outcome.results), [r.error for r in outcome.results]
    assert judge(graph, outcome, reference_runs(graph)) is None


# Two bugs of tvm 0.27 that generated graphs meet (docs/bugs/): a graph showing one
# must agree on every other configuration, and have what the bug needs.
def _scalar_constant_bug(graph, d):  # tvm-inplace-scalar-constant: lr * v_new in sgd_momentum
    return d.kind is Kind.ERROR and "In-place index 0 is out of range" in d.detail and any(n.op is OpKind.SGD_MOMENTUM for n in graph.nodes)


def _folded_constant_bug(graph, d):  # tvm-foldconstant-into-inplace: a node that reads constants only
    constants = {s.name for s in graph.storage if s.kind is StorageKind.CONSTANT}
    return d.failing == "fused.inplace" and any(n.inputs and {r.name for r in n.inputs} <= constants for n in graph.nodes)


KNOWN_TVM_BUGS = ((_scalar_constant_bug, ("inplace", "fused.inplace")), (_folded_constant_bug, ("fused.inplace",)))


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(graphs())
def test_generated_graphs_agree_or_are_refused_with_a_reason(graph):
    outcome = execute_all(TARGET, graph)
    if outcome.refused is not None:
        assert outcome.refused.strip()
        return
    reference = reference_runs(graph)
    d = judge(graph, outcome, reference)
    for shows, configs in KNOWN_TVM_BUGS:
        if d is not None and shows(graph, d):
            outcome.results = [r for r in outcome.results if r.config.key not in configs]
            d = judge(graph, outcome, reference)
    assert d is None, d


def test_the_known_tvm_bugs_show_on_their_configurations_only():
    bugs = ROOT / "docs" / "bugs"
    outcome = execute_all(TARGET, load_graph(bugs / "tvm-inplace-scalar-constant" / "graph.json"))
    errors = {r.config.key: r.error for r in outcome.results}
    assert errors["default"] is None and errors["memory_plan=off"] is None
    assert "In-place index 0" in errors["inplace"] and "In-place index 0" in errors["fused.inplace"]
    graph = load_graph(bugs / "tvm-foldconstant-into-inplace" / "graph.json")
    d = judge(graph, execute_all(TARGET, graph), reference_runs(graph))
    assert d is not None and d.kind is Kind.CHANGED and d.failing == "fused.inplace"

def test_the_in_place_pipeline_really_computes_into_buffers():
    from refcompiler.targets.tvm_relax import _imported

    import tvm

    program = TARGET.build(SGD)
    mod = tvm.relax.transform.DataflowUseInplaceCalls()(_imported(program.model))
    assert "call_tir_inplace" in mod["main"].script()


def test_a_planted_wrong_configuration_is_caught_bit_for_bit():
    outcome = execute_all(resolve_target(FAKE + "TVM_PLANTED"), SGD)
    d = judge(SGD, outcome, reference_runs(SGD))
    assert d is not None and d.kind is Kind.CONFIGS and d.invariant == "TGT-2" and d.bitwise
    assert (d.failing, d.passing, d.run) == ("inplace", "default", 2)


def test_a_write_into_an_input_reaches_the_caller_and_is_tgt3(monkeypatch):
    real = TvmSession.__init__

    def init(self, program, config):
        real(self, program, config)
        vm = self.vm

        class Writes:
            def __getitem__(self, name):
                def main(*args):
                    out = vm[name](*args)
                    np.from_dlpack(args[0])[...] += 1  # the compiled program clobbers its first input
                    return out

                return main

        self.vm = Writes()

    monkeypatch.setattr(TvmSession, "__init__", init)
    outcome = execute_all(TARGET, SGD, only="default")
    d = judge(SGD, outcome, reference_runs(SGD))
    assert d is not None and d.kind is Kind.CHANGED and d.storage == "x" and d.run == 1


def test_outputs_are_views_of_the_vm_tensors_and_inputs_aligned():
    a = aligned_copy(np.arange(5, dtype=np.float32))
    assert a.ctypes.data % 64 == 0 and a.tolist() == [0, 1, 2, 3, 4]
    program = TARGET.build(SGD)
    config = TARGET.configurations()[0]
    session = TARGET.session(program, config)
    entry = {s.name: np.ones(s.shape, np.float32) for s in SGD.storage if s.kind is not StorageKind.CONSTANT}
    got = session.run(entry)
    assert set(got) == {"w", "v", "loss"} and all(not g.flags.owndata for g in got.values())


def test_a_graph_that_writes_nothing_is_refused_not_a_finding():
    graph = Graph("empty", (Storage("x", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (2,)),), ())
    assert isinstance(TARGET.build(graph), Refused)
    assert execute_all(TARGET, graph).refused is not None


def test_an_op_the_frontend_lacks_is_refused_with_its_name(monkeypatch):
    from tvm.relax.frontend.onnx import onnx_frontend

    convert_map = onnx_frontend._get_convert_map()
    monkeypatch.setattr(onnx_frontend, "_get_convert_map", lambda: {k: v for k, v in convert_map.items() if k != "MatMul"})
    graph = load_graph(ROOT / "examples" / "embedding_update.json")
    sgd = SGD.__class__(SGD.name + "-fresh", SGD.storage, SGD.nodes, SGD.meta)  # a model not in the import cache
    refused = TARGET.build(sgd)
    assert isinstance(refused, Refused) and "MatMul" in refused.reason, refused
    assert not isinstance(TARGET.build(graph), Refused)


def test_a_missing_package_is_exit_2_with_the_pip_command(tmp_path):
    hide = tmp_path / "hide" / "tvm"
    hide.mkdir(parents=True)
    (hide / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "hide"), str(ROOT)])}
    ran = subprocess.run([sys.executable, "-m", "refc", "run", str(ROOT / "examples" / "sgd_momentum.json"), "--target", "tvm"],
                         capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "pip install" in ran.stderr and "apache-tvm" in ran.stderr and "Traceback" not in ran.stderr


def test_the_frontends_renaming_warnings_are_not_shown():
    # the frontend renames an input whose name holds a dot, with a UserWarning each
    graph = _dotted()
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        assert not isinstance(TARGET.build(graph), Refused)
    assert [str(w.message) for w in shown if "Renaming" in str(w.message)] == []


def _dotted() -> Graph:
    x = Storage("acc4.x", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (2,), init=Init(seed=1))
    y = Storage("acc4.y", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (2,), init=Init(seed=2))
    nodes = (Node("n", OpKind.NEG, (Ref("acc4.x"),)), Node("s", OpKind.SAVE, (Ref("n"),), attrs=freeze_attrs({"target": "acc4.y"})))
    return Graph(name="dotted", storage=(x, y), nodes=nodes)
