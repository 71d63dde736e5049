"""A target's crash or hang in its child process is a result that names the
configuration; the next call starts a fresh child."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.oracle.context import reference_runs
from refcompiler.graph_json import load_graph
from refcompiler.targets.isolate import run_isolated
from refcompiler.targets.verdict import Kind, judge

ROOT = Path(__file__).resolve().parents[3]
SGD_PATH = ROOT / "examples" / "sgd_momentum.json"
SGD = load_graph(SGD_PATH)
FAKE = "tests.refcompiler.targets.fake_targets:"


def test_a_segfault_is_a_crash_naming_the_configuration_that_crashes_and_one_that_does_not():
    outcome = run_isolated(FAKE + "SEGFAULTS", SGD)
    assert outcome.crash is not None and "SIGSEGV" in outcome.crash
    assert (outcome.crash_config, outcome.crash_passing) == ("fast", "base")
    d = judge(SGD, outcome, reference_runs(SGD))
    assert d.kind is Kind.CRASH and d.invariant == "TGT-4" and d.failing == "fast"


def test_a_hang_is_reported_after_the_timeout():
    outcome = run_isolated(FAKE + "HANGS", SGD, timeout=1.0)
    assert outcome.hung and judge(SGD, outcome, reference_runs(SGD)).kind is Kind.HANG


def test_the_isolated_run_is_the_in_process_run():
    outcome = run_isolated(FAKE + "REFERENCE", SGD)
    assert outcome.crash is None and len(outcome.results) == 3
    assert judge(SGD, outcome, reference_runs(SGD)) is None


def test_a_call_interrupted_while_waiting_leaves_no_answer_for_the_next_graph(monkeypatch):
    # seen in a tvm campaign: a case's time limit fired while the parent waited; the
    # next graph then read the previous graph's outcome
    from refcompiler.targets import isolate

    other = load_graph(Path(__file__).resolve().parents[3] / "examples" / "quantization_profile.json")
    worker = isolate.Worker(FAKE + "REFERENCE")
    real = isolate._recv
    calls = []

    def interrupted(fd, timeout):
        calls.append(1)
        if len(calls) == 2:  # the first answers "ready"; the second is the graph's outcome
            raise TimeoutError("the case's time limit")
        return real(fd, timeout)

    monkeypatch.setattr(isolate, "_recv", interrupted)
    try:
        worker.call(SGD, None, 2, None, 30.0)
    except TimeoutError:
        pass
    assert worker.proc is None
    outcome = worker.call(other, None, 2, None, 30.0)
    worker.stop()
    assert set(outcome.results[0].runs[0]) == {s.name for s in other.storage if s.kind.value != "constant"}


@pytest.mark.parametrize("from_thread", [False, True])
def test_the_child_ends_with_the_process_that_started_it(tmp_path, from_thread):
    # a campaign's worker terminated at its deadline while the target hangs in its
    # child: the child must not spin on, orphaned, after the campaign has ended
    # (started from another thread, as a Dask worker's executor does: by the watchdog alone)
    import os
    import signal
    import subprocess
    import sys
    import time

    started = tmp_path / "child.pid"
    script = f"""
import sys
sys.path[:0] = {sys.path!r}
from refcompiler.targets import isolate
from refcompiler.graph_json import load_graph
import threading
def go():
    worker = isolate.worker({FAKE + "HANGS"!r})
    worker._start()
    open({str(started)!r}, "w").write(str(worker.proc.pid))
    worker.call(load_graph({str(SGD_PATH)!r}), None, 2, None, 3600)
if {from_thread!r}:
    threading.Thread(target=go).start()
else:
    go()
"""
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    deadline = time.monotonic() + 120
    while not started.exists() or not started.read_text():
        assert time.monotonic() < deadline and parent.poll() is None
        time.sleep(0.1)
    child = int(started.read_text())
    time.sleep(0.5)  # the child is in the target's hang now
    parent.send_signal(signal.SIGKILL)
    parent.wait(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        try:  # a zombie of ours? (it is not: its parent was the killed process)
            os.waitpid(child, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.1)
    os.kill(child, signal.SIGKILL)
    raise AssertionError("the target's child process outlived its parent")


def test_a_process_that_ran_a_target_exits_with_its_child_stopped_and_its_pipes_closed():
    import subprocess
    import sys

    code = ("from refcompiler.graph_json import load_graph\n"
            "from refcompiler.targets.isolate import run_isolated\n"
            f"assert run_isolated({FAKE + 'REFERENCE'!r}, load_graph({str(SGD_PATH)!r})).crash is None\n")
    done = subprocess.run([sys.executable, "-W", "always::ResourceWarning", "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ResourceWarning" not in done.stderr, done.stderr[-2000:]
