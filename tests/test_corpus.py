"""Replay every corpus case (DESIGN §10) in the default test run.

Each case must meet its expectation on the correct compiler; a case found
against a mutant must also still kill that mutant, so that the corpus keeps
measuring what it was built to measure.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from refcompiler.mutants import CATALOG

from fuzz.case import ExpectKind
from fuzz.corpus import case_files, load_case, replay
from fuzz.oracle import legal_on_correct_compiler

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
CASES = case_files([CORPUS])


def test_the_corpus_is_seeded():
    names = {p.stem for p in CASES}
    assert {f"example.{p.stem}" for p in (CORPUS.parent / "examples").glob("*.json")} <= names
    assert {f"reject.{i}" for i in ("G-1", "OWN-1", "OWN-2", "OWN-3", "OWN-4")} <= names
    assert {f"mutant.{m}" for m in CATALOG} <= names


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_corpus_case_meets_its_expectation(path):
    case = load_case(path)
    finding = replay(case)
    assert finding is None, f"{path.name}: expected {case.expect}, got {finding}"
    # a stored schedule is one the correct compiler accepts: the case is a
    # plain regression test with it, whatever mutant found it
    assert case.schedule is None or legal_on_correct_compiler(case.graph, case.schedule)


@pytest.mark.parametrize("path", [p for p in CASES if load_case(p).mutant], ids=lambda p: p.stem)
def test_a_mutant_case_still_kills_its_mutant(path):
    case = load_case(path)
    assert case.expect.kind is ExpectKind.PASS or case.expect.invariant is not None
    assert replay(case, mutant=case.mutant) is not None, f"{path.name} no longer kills {case.mutant}"
