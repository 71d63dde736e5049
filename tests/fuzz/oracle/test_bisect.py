"""A wrong result under a pipeline whose order O0 gets right blames the first
pass after which that order goes wrong, and is signed by that pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.corpus import load_case
from fuzz.oracle import Stage, check_case

ROOT = Path(__file__).resolve().parents[3]


# a case of a copy-elimination bug that no IR check catches: the copy into a
# placeholder is gone, so a later reader of its entry value reads the new one
CASES = {"share-ignore-later-reads": ROOT / "corpus" / "mutant.share-ignore-later-reads.json",
         "copy-elim-ignore-readers": ROOT / "tests" / "data" / "cases" / "copy-elim-wrong-entry-value.json"}


@pytest.mark.parametrize("mutant,culprit", [("share-ignore-later-reads", "share_buffers"), ("copy-elim-ignore-readers", "eliminate_copies")])
def test_a_wrong_result_blames_the_first_pass_that_makes_it(mutant, culprit):
    case = load_case(CASES[mutant])
    f = check_case(case, mutant=mutant).finding
    assert f is not None and f.stage is Stage.DIFFERENTIAL and f.invariant == "SEM-1", f
    assert f.blame == culprit and f"wrong from pass {culprit} on" in f.explanation
    assert str(f.signature) == f"SEM-1 at differential by {culprit}" and f.signature.kinds == ()


@pytest.mark.parametrize("mutant", sorted(CASES))
def test_without_the_mutant_nothing_is_wrong(mutant):
    assert check_case(load_case(CASES[mutant])).finding is None
