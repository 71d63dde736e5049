"""``refc mutants``: the catalog, ``--mutant`` on the commands, and the score."""

from __future__ import annotations

import json

import pytest

from refcompiler.mutants import CATALOG
from tests.cli.inprocess import refc




def test_the_json_catalog_lists_all_fourteen(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = refc(capsys, "mutants", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 14 == len(CATALOG)
    assert [r["name"] for r in rows] == list(CATALOG)
    assert all(r["component"] and r["description"] and r["bug_class"] for r in rows)


@pytest.mark.parametrize("command", [["check"], ["compile"], ["run"], ["prove"]])
def test_an_unknown_mutant_is_bad_usage_listing_the_known(capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    code, out, err = refc(capsys, *command, "examples/read_then_save.json", "--mutant", "no-such-bug")
    assert code == 2 and out == ""
    assert "unknown mutant 'no-such-bug'" in err and "sched-drop-save-war" in err and "Traceback" not in err


def test_run_with_a_mutant_shows_the_bug_by_hand(capsys: pytest.CaptureFixture[str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    good, bad = tmp_path / "good.npz", tmp_path / "bad.npz"
    assert refc(capsys, "run", "examples/quantization_profile.json", "--out", str(good))[0] == 0
    assert refc(capsys, "run", "examples/quantization_profile.json", "--mutant", "dce-drop-stateful", "--out", str(bad))[0] == 0
    with np.load(good) as g, np.load(bad) as b:
        assert g["hist"].sum() > 0 and b["hist"].sum() == 0  # the profile never ran


def test_score_kills_a_mutant_and_reports_the_shrunk_case(capsys: pytest.CaptureFixture[str]) -> None:
    # a mutant named twice is scored once (it was "2/2 mutants killed")
    code, out, _ = refc(capsys, "mutants", "--score", "--only", "dce-drop-stateful", "--only", "dce-drop-stateful", "--budget", "20", "--json")
    (row,) = json.loads(out)["mutants"]
    assert code == 0
    assert row["name"] == "dce-drop-stateful" and row["killed"] is True
    assert row["seconds_to_kill"] is not None and row["shrunk_nodes"] <= row["shrunk_nodes_max"] <= 5
    assert row["seconds_each"][0] == row["seconds_to_kill"]
    assert row["case"]["mutant"] == "dce-drop-stateful" and row["case"]["expect"] == "pass"


def test_score_with_an_unknown_name_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = refc(capsys, "mutants", "--score", "--only", "nope")
    assert code == 2 and "unknown mutant" in err
    code, out, err = refc(capsys, "mutants", "--only", "nope")  # without --score: it listed the catalog, ignoring it
    assert (code, out) == (2, "") and "--only sets how --score scores the mutants; add --score" in err
    for flag, value in (("--budget", "3"), ("--seeds", "2")):
        code, out, err = refc(capsys, "mutants", flag, value)
        assert (code, out) == (2, "") and f"{flag} sets how --score scores the mutants; add --score" in err


def test_a_survivor_misses_the_goals(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from refc.cli import mutants

    row = {"name": "inplace-stencil", "killed": False, "campaigns": 1, "kills": 0, "seconds_to_kill": None,
           "shrunk_nodes": None, "shrunk_nodes_max": None, "signature": None}
    monkeypatch.setattr(mutants, "score", lambda name, **_: dict(row, name=name))  # a campaign that never kills it
    code, out, _ = refc(capsys, "mutants", "--score", "--only", "inplace-stencil")
    assert code == 1 and "0/1 mutants killed" in out and out.rstrip().endswith("survived: inplace-stencil")
    assert "missed by: inplace-stencil" in out  # it said "missed by: none"


def _wait_until_it_catches(pid: int, sig: int, seconds: float = 60.0) -> None:
    """Until process ``pid`` has a handler for ``sig`` (its SigCgt mask in /proc)."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/status") as f:
            caught = next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt:"))
        if caught & (1 << (sig - 1)):
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} never caught signal {sig}")


def test_sigterm_stops_the_score_at_once_and_is_not_counted_as_a_survivor() -> None:
    # an interrupted campaign says nothing of the mutant: the score stops there
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-m", "refc", "mutants", "--score", "--only", "verify-allow-foreign-state", "--seeds", "20", "--budget", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_until_it_catches(proc.pid, signal.SIGTERM)  # on a loaded machine refc may still be starting at 4 s
    time.sleep(2)
    assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, (out, err)
    assert "interrupted by SIGTERM while scoring verify-allow-foreign-state (0 of 1 mutants scored)" in err
    assert "SURVIVED" not in err + out and "Traceback" not in err


def test_a_signal_between_two_campaigns_of_a_score_stops_it_as_one_inside_a_campaign() -> None:
    # each campaign restores the handlers it found: in the gap between two a SIGTERM
    # met the default action (refc killed, no word; seen as a flaky -15 above)
    import os
    import signal
    import time

    from fuzz.campaign.score import ScoreInterrupted
    from refc.cli.mutants import _between_campaigns_too

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(ScoreInterrupted) as e:
        with _between_campaigns_too():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises first
    assert e.value.signal_name == "SIGTERM" and signal.getsignal(signal.SIGTERM) is before
