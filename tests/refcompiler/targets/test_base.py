"""The harness: runs carry placeholders and owned state like the reference; an
array a later run changes is reported; a target's exception is contained."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.oracle.context import reference_runs
from refcompiler.errors import UsageError
from refcompiler.graph_json import load_graph
from refcompiler.targets import resolve_target
from refcompiler.targets.base import execute_all, written_storage
from refcompiler.values import initial_values, same_bits

from tests.refcompiler.targets import fake_targets as fake

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples").glob("*.json"))
SGD = load_graph(Path(__file__).resolve().parents[3] / "examples" / "sgd_momentum.json")
SGD_ENTRY = initial_values(SGD)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_runs_carry_state_like_the_reference(path):
    graph = load_graph(path)
    outcome = execute_all(fake.REFERENCE, graph, runs=2)
    want = reference_runs(graph)
    for r in outcome.results:
        assert r.error is None and not r.changed
        for got, ref in zip(r.runs, want, strict=True):
            assert all(same_bits(got[s], ref[s]) for s in written_storage(graph))


def test_an_output_buffer_reused_by_the_next_run_is_reported():
    outcome = execute_all(fake.ALIASING, SGD)
    assert all(r.changed and r.changed[0][1] == 1 for r in outcome.results)
    assert "returned 'w' of run 1 changed by a later run" in outcome.results[0].changed_text


def test_an_input_the_target_writes_into_is_reported_as_its_own_runs_and_the_next_run_gets_it_whole():
    # it was "input 'x' of run 1 changed by a later run", and run 2 was fed the array run 1 had damaged
    r = execute_all(fake.WRITES_INPUT, SGD).results[0]
    floats = sorted(n for n, a in SGD_ENTRY.items() if a.dtype.kind == "f")
    assert sorted(r.changed_text[: len(floats)]) == [f"input '{n}' of run 1 written by run 1" for n in floats]
    assert f"input '{floats[0]}' of run 2 written by run 2" in r.changed_text
    assert not any("later run" in text for text in r.changed_text)
    for got, ref in zip(r.runs, reference_runs(SGD), strict=True):  # each run computed from what it should have been fed
        assert all(same_bits(got[s], ref[s]) for s in written_storage(SGD))


def test_an_exception_is_contained_per_configuration():
    outcome = execute_all(fake.RAISES, SGD)
    assert len(outcome.results) == 3
    assert all(r.error.startswith("run 1: RuntimeError: planted failure") for r in outcome.results)


def test_only_one_configuration():
    assert [r.config.key for r in execute_all(fake.REFERENCE, SGD, only="fast").results] == ["fast"]


def test_resolving_by_name_and_module_attribute():
    assert resolve_target("onnxruntime").name == "onnxruntime"
    assert resolve_target("tests.refcompiler.targets.fake_targets:REFERENCE") is fake.REFERENCE
    with pytest.raises(UsageError, match="not a built-in target"):
        resolve_target("tvm-nightly")
    with pytest.raises(UsageError, match="has no 'name'"):
        resolve_target("tests.refcompiler.targets.fake_targets:np")
    with pytest.raises(UsageError, match="pip install not-a-real-package"):
        resolve_target("tests.refcompiler.targets.fake_targets:MISSING")


def test_what_build_raises_is_the_targets_crash_naming_build():
    from refcompiler.targets import resolve_target

    outcome = execute_all(resolve_target("tests.refcompiler.targets.fake_targets:BUILD_RAISES"), SGD)
    assert outcome.crash is not None and outcome.crash.startswith("build() raised RuntimeError: planted (at ")
    assert "fake_targets.py" in outcome.crash
