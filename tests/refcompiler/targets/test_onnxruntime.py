"""The onnxruntime target on small graphs: every example under every
configuration agrees with the others and with the reference; the options of
each configuration reach the session; what it refuses."""

from __future__ import annotations

from pathlib import Path

import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, given, settings

from fuzz.oracle.context import reference_runs
from fuzz.strategies.valid import graphs
from refcompiler.graph import Graph, Storage, StorageKind
from refcompiler.graph_json import load_graph
from refcompiler.targets import resolve_target
from refcompiler.targets.base import Refused, execute_all
from refcompiler.targets.onnxruntime import PAIRS, TARGET, session_options
from refcompiler.targets.verdict import judge
from specs import Dtype

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples").glob("*.json"))


def test_the_configurations_are_the_full_product_and_a_pairwise_cover():
    configs = TARGET.configurations()
    assert len(configs) == 32 == len({c.key for c in configs})
    assert {c.level for c in configs} == {"disable", "basic", "extended", "all"}
    assert configs[0].key == "disable.mem_pattern=on.arena=on.sequential"
    pairs = PAIRS.configurations()
    assert len(pairs) == 8 and {c.key for c in pairs} <= {c.key for c in configs}
    settings_ = [(c.level, *(v for _, v in c.options)) for c in pairs]
    for i in range(4):
        for j in range(i + 1, 4):
            wanted = {(a[i], a[j]) for a in [(c.level, *(v for _, v in c.options)) for c in configs]}
            assert {(s[i], s[j]) for s in settings_} == wanted


@pytest.mark.parametrize("config", TARGET.configurations(), ids=lambda c: c.key)
def test_each_configuration_sets_its_session_options(config):
    so = session_options(config)
    assert so.enable_mem_pattern == config.option("mem_pattern")
    assert so.enable_cpu_mem_arena == config.option("arena")
    parallel = so.execution_mode == ort.ExecutionMode.ORT_PARALLEL
    assert parallel == (config.option("mode") == "parallel")
    level = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED", "all": "ORT_ENABLE_ALL"}
    assert so.graph_optimization_level == getattr(ort.GraphOptimizationLevel, level[config.level])


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_agrees_under_every_configuration(path):
    graph = load_graph(path)
    outcome = execute_all(resolve_target("onnxruntime"), graph)
    assert len(outcome.results) == 32
    assert all(r.error is None and len(r.runs) == 2 and not r.changed for r in outcome.results)
    assert judge(graph, outcome, reference_runs(graph)) is None


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(graphs())
def test_generated_graphs_agree_under_the_pairwise_configurations(graph):
    outcome = execute_all(PAIRS, graph)
    if outcome.refused is None:
        assert judge(graph, outcome, reference_runs(graph)) is None


def test_a_graph_that_writes_nothing_is_refused_not_a_finding():
    graph = Graph("empty", (Storage("x", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (2,)),), ())
    assert isinstance(TARGET.build(graph), Refused)
    assert execute_all(TARGET, graph).refused is not None
