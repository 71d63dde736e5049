"""``refc compile CASE`` / ``refc run CASE`` (``refc.cli.settings.load_with_settings``):
a corpus case is compiled under its recorded schedule (its order, or its
scheduler called with its seed), pipeline, mutant and inputs unless the command
line says otherwise; a plug-in it names needs ``--allow-plugin``; ``--order``
is checked (SCH-1, exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.cli.inprocess import refc

ROOT = Path(__file__).resolve().parents[2]
READ_THEN_SAVE = ROOT / "examples" / "read_then_save.json"
LATER_READS = ROOT / "corpus" / "mutant.share-ignore-later-reads.json"

# A user's scheduler: a legal order for an even seed; for an odd one, the save of
# A before the read of A in "late" (a broken memory edge, SCH-1).
PLUGIN = """
def pick(graph, deps, seed=0):
    return ["sum", "late", "s", "save_late"] if seed % 2 == 0 else ["sum", "s", "late", "save_late"]
"""


def _schedule_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("schedule "))


def _case(tmp_path: Path, **fields: object) -> Path:
    doc = json.loads(READ_THEN_SAVE.read_text()) | {"expect": "pass"} | fields
    path = tmp_path / "case.json"
    path.write_text(json.dumps(doc))
    return path


def test_compile_uses_the_cases_schedule_and_pipeline(capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, err = refc(capsys, "compile", LATER_READS, "--no-mutant")
    assert code == 0
    assert _schedule_line(out) == "schedule neg0 add1 add_sub2 save3"
    assert "share_buffers" in next(line for line in out.splitlines() if line.startswith("passes "))  # O2, not O0
    assert "as the case records: schedule neg0,add1,add_sub2,save3; pipeline O2" in err
    code, out, _ = refc(capsys, "compile", LATER_READS, "--no-mutant", "--pipeline", "O0")
    assert code == 0 and not any(line.startswith("passes") for line in out.splitlines())


def test_an_explicit_scheduler_overrides_the_cases_schedule(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    case = _case(tmp_path, schedule=["sum", "late", "s", "save_late"])
    assert _schedule_line(refc(capsys, "compile", case)[1]) == "schedule sum late s save_late"
    code, out, err = refc(capsys, "compile", case, "--scheduler", "topo")
    assert code == 0 and "as the case records: pipeline O2" in err and "schedule sum" not in err
    assert _schedule_line(out) == _schedule_line(refc(capsys, "compile", READ_THEN_SAVE)[1])


def test_run_uses_the_cases_mutant_unless_told_not_to(capsys) -> None:  # type: ignore[no-untyped-def]
    code, wrong, err = refc(capsys, "run", LATER_READS)
    assert code == 0 and "mutant share-ignore-later-reads" in err
    right = refc(capsys, "run", LATER_READS, "--no-mutant")[1]
    reference = refc(capsys, "run", LATER_READS, "--reference")[1]
    assert wrong != right and right.replace("compiled", "reference") == reference
    assert refc(capsys, "run", LATER_READS, "--mutant", "share-ignore-later-reads")[1] == wrong


def test_run_uses_the_cases_inputs(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    values = [1.0, 2.0, 3.0, 4.0]
    case = _case(tmp_path, inputs={"A": {"value": values}})
    out = tmp_path / "out.npz"
    assert refc(capsys, "run", case, "--out", out)[0] == 0
    with np.load(out) as got:
        assert got["out"].tolist() == [v * v for v in values]  # late = A * A, A as given
    np.savez(tmp_path / "in.npz", A=np.zeros(4, np.float32))
    assert refc(capsys, "run", case, "--inputs", tmp_path / "in.npz", "--out", out)[0] == 0
    with np.load(out) as got:
        assert got["out"].tolist() == [0.0] * 4  # --inputs wins over the case's


def test_a_case_naming_a_plugin_scheduler_needs_allow_plugin(tmp_path: Path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "case_sched.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    case = _case(tmp_path, scheduler="case_sched:pick", scheduler_seed=1)
    for command in ("compile", "run"):
        code, out, err = refc(capsys, command, case)
        assert code == 2 and out == ""
        assert err.strip().count("\n") == 0 and "case_sched" in err and "--allow-plugin case_sched" in err
    code, out, err = refc(capsys, "compile", case, "--allow-plugin", "case_sched")
    assert code == 1 and "SCH-1" in err and "'s'" in err and "late" in err  # seed 1, as recorded: the wrong order
    code, out, _ = refc(capsys, "compile", case, "--allow-plugin", "case_sched", "--seed", "2")
    assert code == 0 and _schedule_line(out) == "schedule sum late s save_late"
    assert refc(capsys, "run", case, "--allow-plugin", "case_sched")[0] == 1
    assert refc(capsys, "run", case, "--scheduler", "topo")[0] == 0  # the case's plug-in is not used, not needed
    assert refc(capsys, "run", case, "--reference")[0] == 0


@pytest.mark.parametrize("command", ["compile", "run"])
@pytest.mark.parametrize(
    ("order", "words"),
    [
        ("sum,s,late", ("misses: 'save_late'", "SCH-1")),
        ("sum,s,late,save_late,nope", ("names no node: 'nope'", "SCH-1")),
        ("sum,sum,late,s,save_late", ("names a node twice: 'sum'", "SCH-1")),
        ("s,sum,late,save_late", ("'s'", "sum -> s", "data edge", "SCH-1")),
        ("sum,s,late,save_late", ("'s'", "late -> s", "memory edge", "SCH-1")),
    ],
)
def test_an_order_that_is_not_legal_is_bad_usage(capsys, command: str, order: str, words: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    code, out, err = refc(capsys, command, READ_THEN_SAVE, "--order", order)
    assert code == 2 and out == "" and err.count("\n") == 1 and "--order" in err
    assert all(w in err for w in words), err


def test_an_explicit_order_is_compiled_and_overrides_the_cases(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = refc(capsys, "compile", READ_THEN_SAVE, "--order", "late,sum,save_late,s")
    assert code == 0 and _schedule_line(out) == "schedule late sum save_late s"
    case = _case(tmp_path, schedule=["sum", "late", "s", "save_late"])
    assert _schedule_line(refc(capsys, "compile", case, "--order", "late,sum,save_late,s")[1]) == "schedule late sum save_late s"
    assert refc(capsys, "run", READ_THEN_SAVE, "--order", "late,sum,save_late,s")[0] == 0


def test_a_case_with_an_illegal_schedule_is_malformed(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    case = _case(tmp_path, schedule=["sum", "s", "late", "save_late"])
    code, out, err = refc(capsys, "compile", case)
    assert code == 2 and out == "" and "schedule" in err and "SCH-1" in err and err.count("\n") == 1
    assert refc(capsys, "compile", case, "--scheduler", "topo")[0] == 0
