"""A chunk checks cases drawn at random, each once; Hypothesis shrinks its
first new failure from that case's recorded choices, until its shrink calls
are spent; a failure whose replay does not reproduce still reaches the
reducer."""

from __future__ import annotations

import pytest

from specs import OpKind

from refcompiler.errors import UsageError

from fuzz.campaign import chunk as chunk_module
from fuzz.campaign.cases import chunk_seed, random_case
from fuzz.campaign.chunk import Chunk, _ChunkRun, run_chunk
from fuzz.campaign.config import CampaignConfig
from fuzz.case import PASS
from fuzz.strategies import graphs
from fuzz.shrink import graph_size

MUTANT = CampaignConfig(budget=None, max_cases=50, out=None, mutant="alloc-early-free", reduce_attempts=20)


def _spied_run(task: Chunk, monkeypatch):  # type: ignore[no-untyped-def]
    """Run ``task``, recording every case its body sees, in order."""
    seen: list = []
    real = _ChunkRun.body

    def body(self, case):  # type: ignore[no-untyped-def]
        seen.append(case)
        return real(self, case)

    monkeypatch.setattr(_ChunkRun, "body", body)
    run = _ChunkRun(task)
    return run, run.run(), seen


def test_a_chunk_checks_its_cases_in_order_and_counts_each_once():
    config = CampaignConfig(budget=None, max_cases=12, out=None)
    task = Chunk(0, chunk_seed(4, 0), 12, config)
    result = run_chunk(task)
    assert result.cases == len({repr(random_case(config, task.seed, k)[0]) for k in range(12)}) == 12
    assert result.schedules > 0 and dict(result.seconds_by_stage)["generate"] > 0


def test_hypothesis_shrinks_the_first_new_failure_from_its_own_choices(monkeypatch):
    task = Chunk(0, chunk_seed(3, 0), 50, MUTANT)
    run, result, seen = _spied_run(task, monkeypatch)
    assert result.found
    generated = [random_case(MUTANT, task.seed, k)[0] for k in range(result.cases)]
    failing = generated[-1]
    assert seen[: result.cases] == generated
    assert seen[result.cases] == failing  # Hypothesis's first example: the failing case replayed
    assert run.state.shrink_calls > 0
    best = run.state.best.graph
    assert graph_size(best) < graph_size(failing[0])


def test_hypothesis_stops_shrinking_once_the_shrink_calls_are_spent(monkeypatch):
    # Hypothesis would go on drawing hundreds of attempts that could not be
    # checked any more; it stops at the first one, and the reducer goes on
    calls = 3
    config = CampaignConfig(budget=None, max_cases=50, out=None, mutant="alloc-early-free", reduce_attempts=20, shrink_calls=calls)
    new: list[bool] = []  # per case the body saw: whether the oracle had not seen it yet
    real = _ChunkRun.body

    def body(self, case):  # type: ignore[no-untyped-def]
        new.append(chunk_module._key(*case) not in self.state.cache)
        return real(self, case)

    monkeypatch.setattr(_ChunkRun, "body", body)
    run = _ChunkRun(Chunk(0, chunk_seed(3, 0), 50, config))
    result = run.run()
    assert result.found and result.found[0].case_doc["nodes"] and run.state.shrink_calls == calls
    # after the generated cases: the attempts checked, then the one that found the calls spent
    assert sum(new[result.cases:]) == calls + 1


def test_a_failure_whose_replay_does_not_reproduce_is_kept_for_the_reducer(monkeypatch):
    # Hypothesis shrinks through a strategy that gives something else (graphs of one
    # dead neg, which pass): the failing case stays the best, and is reduced
    other = graphs(ops=[OpKind.NEG], max_nodes=2).map(lambda g: (g, PASS, 0))
    monkeypatch.setattr(chunk_module, "fuzz_cases", lambda config: other)
    task = Chunk(0, chunk_seed(3, 0), 50, MUTANT)
    run, result, seen = _spied_run(task, monkeypatch)
    failing = random_case(MUTANT, task.seed, result.cases - 1)[0]
    assert seen[result.cases - 1] == failing and all(case[0].nodes[0].op is OpKind.NEG for case in seen[result.cases :])
    assert run.state.best.graph == failing[0] and len(result.found) == 1 and result.found[0].reproduces


@pytest.mark.parametrize("mutant, pipeline", [("alloc-early-free", "O0"), ("share-any-input", "O2")])
def test_a_case_records_the_pipeline_its_finding_was_made_under(mutant, pipeline):
    # a fault of the O0 program checked beside O2 was stored as "O2": `refc compile CASE` and
    # `refc run CASE`, which compile as the case records, then showed nothing wrong
    from fuzz.case import case_from_doc
    from refcompiler.driver import compile_graph
    from refcompiler.errors import InvariantViolation
    from refcompiler.mutants import activate

    config = CampaignConfig(budget=None, max_cases=50, out=None, mutant=mutant, reduce_attempts=20)
    result = run_chunk(Chunk(0, chunk_seed(3, 0), 50, config))
    assert result.found
    case = case_from_doc(result.found[0].case_doc)
    assert case.pipeline == pipeline
    with activate(mutant), pytest.raises(InvariantViolation) as caught:
        compile_graph(case.graph, pipeline=case.pipeline, schedule=case.schedule,
                      scheduler=case.scheduler or "topo", seed=case.scheduler_seed or 0)
    assert str(case.finding.signature).startswith(caught.value.invariant)


def test_a_graph_campaign_carries_each_case_of_its_graph_object_to_the_next(monkeypatch):
    """``--graph``: every case prepares nothing again (a copy with other seeds
    is checked as the graph with those values as inputs); the reference runs
    once for the cases that are the graph itself, once for each other case."""
    from pathlib import Path

    import fuzz.oracle.context as context
    from refcompiler.graph_json import load_graph

    graph = load_graph(Path(__file__).resolve().parents[3] / "examples" / "read_then_save.json")
    config = CampaignConfig(budget=None, max_cases=30, out=None, graph=graph, graph_file="g.json", invalid_share=0.0)
    prepared: list = []
    references: list = []
    real, real_reference = context.prepare, context.reference_runs
    monkeypatch.setattr(context, "prepare", lambda g: prepared.append(g) or real(g))
    monkeypatch.setattr(context, "reference_runs", lambda g, inputs: references.append(inputs) or real_reference(g, inputs))
    result = run_chunk(Chunk(0, chunk_seed(2, 0), 30, config))
    itself = sum(random_case(config, chunk_seed(2, 0), k)[0][0] is graph for k in range(30))
    assert result.cases == 30 and not result.found and 5 <= itself <= 25
    assert prepared == [graph]
    assert len(references) == 30 - itself + 1 and sum(not inputs for inputs in references) == 1


@pytest.mark.parametrize(
    ("options", "as_inputs"),
    [({}, True), ({"pipeline": "O0,mine:p"}, False), ({"schedulers": ("topo", "mine:s")}, False), ({"target": "onnxruntime"}, False)],
)
def test_a_graph_campaign_checks_a_copy_with_other_seeds_as_that_copy_where_a_users_code_sees_them(options, as_inputs):
    """A user's pass or scheduler, or a target, may read the seeds a graph
    carries (a program's buffers keep them): it is given the copy the campaign
    drew, not the graph with the copy's values as inputs."""
    from dataclasses import replace
    from pathlib import Path

    from refcompiler.graph import Init
    from refcompiler.graph_json import load_graph

    graph = load_graph(Path(__file__).resolve().parents[3] / "examples" / "read_then_save.json")
    seeded = next(s for s in graph.storage if s.init is not None and s.init.seed is not None and s.kind.value != "constant")
    copy = replace(graph, storage=tuple(replace(s, init=Init(seed=s.init.seed + 1)) if s is seeded else s for s in graph.storage))
    config = CampaignConfig(budget=None, max_cases=1, out=None, graph=graph, graph_file="g.json", **options)
    case = _ChunkRun(Chunk(0, chunk_seed(2, 0), 1, config))._case(copy, PASS)
    assert (case.graph is graph, case.inputs) == ((True, ((seeded.name, Init(seed=seeded.init.seed + 1)),)) if as_inputs else (False, ()))


@pytest.mark.parametrize("limit", ["REFC_MAX_BYTES", "REFC_MAX_ELEMENTS"])
def test_a_generated_graph_beyond_a_limit_the_user_set_is_bad_usage_not_a_finding(monkeypatch, limit):
    """Limits set below what the generator draws (REFC_MAX_BYTES=100): the chunk
    found 'crash at verify: refc raised LimitExceeded' and stored it as a finding."""
    monkeypatch.setenv(limit, "5")
    config = CampaignConfig(budget=None, max_cases=5, out=None)
    with pytest.raises(UsageError, match=f"a generated graph is beyond a resource limit: .*{limit}.*--max-nodes, --max-dim"):
        run_chunk(Chunk(0, chunk_seed(4, 0), 5, config))


def test_the_chunks_cache_tells_cases_apart_that_are_equal_only_as_values(monkeypatch):
    """Two graphs whose one tie value is 0.0 in one and -0.0 in the other
    compare equal as values; the second is checked, not given the first's finding."""
    from refcompiler.graph_json import graph_from_doc

    def graph(zero: float):  # type: ignore[no-untyped-def]
        return graph_from_doc({"format": "refc-graph/1", "name": "g", "storage": [
            {"name": "A", "kind": "placeholder", "dtype": "float32", "shape": [1], "init": {"value": [zero]}},
            {"name": "B", "kind": "placeholder", "dtype": "float32", "shape": [1]}],
            "nodes": [{"name": "x", "op": "relu", "inputs": ["A"]}, {"name": "s", "op": "save", "inputs": ["x"], "attrs": {"target": "B"}}]})

    plus, minus = graph(0.0), graph(-0.0)
    assert plus == minus and hash(plus) == hash(minus)
    checked = []
    monkeypatch.setattr(_ChunkRun, "evaluate", lambda self, g, e, s: checked.append(g) or None)
    run = _ChunkRun(Chunk(0, chunk_seed(3, 0), 5, CampaignConfig(budget=None, max_cases=5, out=None)))
    for g in (plus, minus, graph(-0.0)):
        assert run.finding_of(g, PASS, 0) is None
    assert checked == [plus, minus] and checked[1] is minus  # the third: the same document as the second
