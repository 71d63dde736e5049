"""Every invariant id that appears anywhere in the project is declared in ``specs.INVARIANTS``.

Ids look like ``G-1``, ``OWN-2``, ``SCH-1``, ``IR-4``, ``MEM-1``, ``SEM-1``. The
scan covers the code (refcompiler/, fuzz/, specs/), the tests, and the data
that names ids (corpus cases, tests/data/invalid/ whose files are named after
the id they break), so that a mistyped id in a checker, a corpus
``expect`` or a file name fails here rather than at run time.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from specs import INVARIANTS, Level, invariant

from refcompiler.errors import InternalError, InvariantViolation

ROOT = Path(__file__).resolve().parents[2]
ID_PATTERN = re.compile(r"\b(?:G|OWN|SCH|IR|MEM|SEM|TGT)-\d+\b")
SCANNED = ("refcompiler", "fuzz", "specs", "tests", "corpus", "examples")
SUFFIXES = {".py", ".json", ".md"}


def ids_in(text: str) -> set[str]:
    return set(ID_PATTERN.findall(text))


def undeclared(text: str) -> set[str]:
    return ids_in(text) - set(INVARIANTS)


def project_files() -> list[Path]:
    files = []
    for top in SCANNED:
        base = ROOT / top
        if base.is_dir():
            files += [p for p in base.rglob("*") if p.suffix in SUFFIXES and p.is_file() and "__pycache__" not in p.parts]
    files += [ROOT / name for name in ("README.md", "HACKING.md") if (ROOT / name).is_file()]
    return sorted(files)


def test_every_invariant_id_used_in_the_project_is_declared():
    found: dict[str, list[str]] = {}
    for path in project_files():
        for inv in undeclared(path.name) | undeclared(path.read_text(encoding="utf-8", errors="replace")):
            found.setdefault(inv, []).append(str(path.relative_to(ROOT)))
    assert found == {}, f"undeclared invariant ids: {found}"


def test_the_scan_sees_the_ids_the_code_uses():
    seen: set[str] = set()
    for path in project_files():
        seen |= ids_in(path.read_text(encoding="utf-8", errors="replace"))
    # the verifier's ids at least; a scan that read nothing would pass the test above
    assert {"G-1", "OWN-1", "OWN-2", "OWN-3", "OWN-4"} <= seen


def test_the_check_catches_an_undeclared_id():
    # built from parts so that this file itself holds no undeclared id
    typo = "OWN" + "-" + "99"
    text = f'raise InvariantViolation("{typo}", "two owners")  # see G-1, IR-4'
    assert ids_in(text) == {typo, "G-1", "IR-4"}
    assert undeclared(text) == {typo}
    assert undeclared("OWN-1..4 and SCH-1/2") == set()
    assert undeclared("PG-13 and XIR-4 and IR-4a are not ids") == set()


def test_table_is_keyed_by_id_and_every_level_is_used():
    for inv_id, inv in INVARIANTS.items():
        assert inv.id == inv_id and ID_PATTERN.fullmatch(inv_id) and inv.statement
        assert invariant(inv_id) is inv
    assert {inv.level for inv in INVARIANTS.values()} == set(Level)


def test_design_ids_are_all_declared():
    design = {"G-1", "OWN-1", "OWN-2", "OWN-3", "OWN-4", "SCH-1", "SCH-2",
              *(f"IR-{k}" for k in range(1, 7)), "MEM-1", "SEM-1",
              *(f"TGT-{k}" for k in range(1, 5))}
    assert set(INVARIANTS) == design


def test_a_violation_with_an_undeclared_id_is_an_internal_error():
    with pytest.raises(InternalError):
        InvariantViolation("OWN" + "-" + "9", "no such rule")
    v = InvariantViolation("OWN-2", "peek reads acc", names=("peek", "acc"))
    assert v.invariant == "OWN-2" and v.names == ("peek", "acc") and str(v) == "OWN-2: peek reads acc"
