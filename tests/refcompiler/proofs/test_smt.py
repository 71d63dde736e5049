"""``smt``: the one module that imports z3, and its contract for unknown answers."""

from __future__ import annotations

import re
import time
from pathlib import Path

from refcompiler.proofs import smt

ROOT = Path(__file__).resolve().parents[3]
Z3_IMPORT = re.compile(r"^\s*(import\s+z3\b|from\s+z3\b)", re.MULTILINE)


def test_z3_is_imported_only_in_smt():
    importers = sorted(
        str(p.relative_to(ROOT))
        for top in ("refcompiler", "fuzz", "specs")
        for p in (ROOT / top).rglob("*.py")
        if Z3_IMPORT.search(p.read_text(encoding="utf-8"))
    )
    assert importers == ["refcompiler/proofs/smt.py"]


def test_the_check_would_catch_an_import():
    assert Z3_IMPORT.search("import os\nfrom z3 import Int\n")
    assert Z3_IMPORT.search("    import z3\n")
    assert not Z3_IMPORT.search("# z3 is imported only in smt\n")


def test_a_passed_deadline_is_unknown_not_unsat():
    s = smt.difference_solver()
    x = smt.int_vars(["a", "b"])
    s.add(x["a"] < x["b"])
    assert smt.check(s) is smt.SatResult.SAT
    assert smt.check(s, deadline=time.monotonic() - 1) is smt.SatResult.UNKNOWN
    assert smt.check(s, x["b"] < x["a"]) is smt.SatResult.UNSAT
    # the assumption did not stick: the solver is still satisfiable
    assert smt.check(s) is smt.SatResult.SAT
    model = smt.int_model(s, x)
    assert model["a"] < model["b"]


def test_counting_and_connectives():
    s = smt.solver()
    v = smt.int_vars(["p", "q"])
    s.add(smt.count_true([v["p"] > 0, v["q"] > 0, smt.any_of()]) >= 2, smt.all_of(v["p"] < 5))
    assert smt.check(s) is smt.SatResult.SAT
    s.add(v["q"] < 0)
    assert smt.check(s) is smt.SatResult.UNSAT
