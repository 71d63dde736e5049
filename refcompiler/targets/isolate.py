"""Running a target in a child process, so that its crash or hang is a result.

A ``Worker`` is one long-lived child (``python -m refcompiler.targets.isolate
SPEC``: a fresh interpreter, nothing inherited from the fuzzer) that resolves the
target once and then runs ``base.execute_all`` for each graph it is sent (pickles,
length-prefixed, over its stdin and stdout). A child that dies
(a segfault, an abort) or does not answer within the time limit is an
``Outcome`` with ``crash`` set (``hung`` for the time limit), and is replaced by
a new child on the next call. ``run_isolated`` then runs each configuration on
its own to say which one crashes and which one does not.

Only the fuzzer's own objects cross the pipe (graphs, arrays, outcomes), between
two processes it started.
"""

from __future__ import annotations

import atexit
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from typing import Any, Mapping

import numpy as np

from refcompiler.graph import Graph
from refcompiler.targets.base import Outcome, execute_all

__all__ = ["Worker", "run_isolated", "run_target", "target_timeout", "worker", "DEFAULT_TIMEOUT", "LOCATE_TRIES"]

DEFAULT_TIMEOUT = 30.0  # seconds for every configuration of one graph
_START_TIMEOUT = 120.0  # a fresh interpreter importing the target's package
LOCATE_TRIES = 8  # configurations tried alone after a crash (each may restart the child)
_WORKERS: dict[str, "Worker"] = {}
_ORPHAN_CHECK = 0.5  # seconds between a child's checks that its parent is still there
_TIED = "REFC_TARGET_CHILD_TIED"  # set to 1 for a child started by a main thread (``_die_with_parent``)


def _send(f: Any, obj: object) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(struct.pack("<Q", len(data)) + data)
    f.flush()


def _read_exactly(fd: int, n: int, deadline: float) -> bytes | None:
    """``n`` bytes from ``fd`` by ``deadline`` (``None``: too late); ``EOFError`` when it closes."""
    chunks, got = [], 0
    while got < n:
        left = None if deadline == float("inf") else deadline - time.monotonic()
        if left is not None and (left <= 0 or not select.select([fd], [], [], left)[0]):
            return None
        chunk = os.read(fd, n - got)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _recv(fd: int, timeout: float) -> tuple[bool, object]:
    """(answered in time, the object)."""
    deadline = time.monotonic() + timeout
    head = _read_exactly(fd, 8, deadline)
    if head is None:
        return False, None
    body = _read_exactly(fd, struct.unpack("<Q", head)[0], deadline)
    return (False, None) if body is None else (True, pickle.loads(body))


def _die_with_parent() -> None:
    """End this child when the process that started it is gone (a campaign's
    worker terminated at its deadline while the target hangs here): the kernel
    kills it where it can (Linux's parent-death signal, when a main thread
    started it), and a thread checks for a new parent every ``_ORPHAN_CHECK``
    seconds (elsewhere, or should the parent have gone before the signal was
    asked for, or the target hold the interpreter in pure Python)."""
    parent = os.getppid()
    # the signal comes when the *thread* that started this child ends: asked for only
    # when that was a main thread (a Dask worker's executor threads come and go)
    if sys.platform.startswith("linux") and os.environ.get(_TIED) == "1":
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(1)
            time.sleep(_ORPHAN_CHECK)

    threading.Thread(target=watch, daemon=True, name="refc-orphan-check").start()


def serve(spec: str) -> None:
    """The child's loop (``python -m refcompiler.targets.isolate SPEC``): requests on
    stdin, answers on the original stdout; what the target prints goes to stderr.
    It ends with its parent (``_die_with_parent``)."""
    _die_with_parent()
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    from refcompiler.targets import resolve_target

    target = resolve_target(spec)
    _send(out, "ready")
    while True:
        try:
            ok, request = _recv(0, float("inf"))
        except EOFError:
            return
        if request[0] == FILES:  # type: ignore[index]
            _send(out, _files_answer(spec, target, *request[1:]))  # type: ignore[index]
            continue
        graph, inputs, runs, only = request  # type: ignore[misc]
        try:
            outcome = execute_all(target, graph, inputs, runs, only)
        except Exception as e:  # outside every configuration (building the program): say what
            outcome = Outcome(crash=f"the harness raised {type(e).__name__}: {e}")
        _send(out, outcome)


# a request for a bug folder's files: (FILES, graph, failing key, passing key)
FILES = "bug_files"


def _files_answer(spec: str, target: Any, graph: Graph, failing: str | None, passing: str | None) -> tuple[str, object]:
    """In the child: ``("files", {name: bytes})``, or ``("error", message)`` when
    the target's own code failed making them (``bugs.target_files``)."""
    from refcompiler.errors import ExecutionError
    from refcompiler.targets.bugs import target_files

    try:
        return "files", {name: bytes(data) for name, data in target_files(spec, target, graph, failing, passing).items()}
    except ExecutionError as e:
        return "error", str(e)


class Worker:
    """One child process serving one target spec."""

    def __init__(self, spec: str):
        self.spec = spec
        self.proc: subprocess.Popen | None = None

    def _start(self) -> str | None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "refcompiler.targets.isolate", self.spec],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), _TIED: "1" if threading.current_thread() is threading.main_thread() else "0"},
        )  # fmt: skip
        try:
            ok, _ = _recv(self.proc.stdout.fileno(), _START_TIMEOUT)  # type: ignore[union-attr]
        except EOFError:
            return f"the target process exited while starting ({self._died()})"
        except BaseException:  # interrupted while it starts: its "ready" would be read as the next answer
            self.stop()
            raise
        if not ok:
            self.stop()
            return "the target process did not start"
        return None

    def _died(self) -> str:
        assert self.proc is not None
        code = self.proc.wait(5)
        self.stop()
        if code < 0:
            try:
                return f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}"

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(5)
            for f in (self.proc.stdin, self.proc.stdout):
                if f is not None:
                    f.close()
        self.proc = None

    def call(self, graph: Graph, inputs: Mapping[str, np.ndarray] | None, runs: int, only: str | None, timeout: float) -> Outcome:
        answered, answer = self._ask((graph, dict(inputs) if inputs else None, runs, only), timeout)
        if not answered:
            return Outcome(crash=answer, hung=answer.startswith("no answer"))  # type: ignore[arg-type]
        return answer  # type: ignore[return-value]

    def files(self, graph: Graph, failing: str | None, passing: str | None, timeout: float) -> tuple[str, object]:
        """A bug folder's files made in the child (``_files_answer``), or
        ``("lost", why)`` when it died or did not answer in time."""
        answered, answer = self._ask((FILES, graph, failing, passing), timeout)
        return answer if answered else ("lost", answer)  # type: ignore[return-value]

    def _ask(self, request: object, timeout: float) -> tuple[bool, object]:
        """(True, the child's answer) or (False, why there is none: it could not
        start, died, or gave no answer within ``timeout`` seconds)."""
        if self.proc is None or self.proc.poll() is not None:
            problem = self._start()
            if problem is not None:
                return False, problem
        assert self.proc is not None
        try:
            _send(self.proc.stdin, request)
            ok, answer = _recv(self.proc.stdout.fileno(), timeout)  # type: ignore[union-attr]
        except (EOFError, BrokenPipeError):
            return False, f"the target process died ({self._died()})"
        except BaseException:  # interrupted mid-call (a case's time limit, Ctrl-C): its answer
            self.stop()  # would be read by the next call, for another graph; a fresh child instead
            raise
        if not ok:
            self.stop()
            return False, f"no answer within {timeout:g} s"
        return True, answer


def target_timeout(target: Any) -> float:
    """Seconds the target's child may take for one graph: its own ``timeout``, or ``DEFAULT_TIMEOUT``."""
    return float(getattr(target, "timeout", DEFAULT_TIMEOUT))


def worker(spec: str) -> Worker:
    """The child process serving ``spec`` (started when first asked; stopped
    when this process exits, ``_stop_all``)."""
    if spec not in _WORKERS:
        if not _WORKERS:
            atexit.register(_stop_all)
        _WORKERS[spec] = Worker(spec)
    return _WORKERS[spec]


def _stop_all() -> None:
    """Stop every child and close its pipes at exit: a child tied to this
    process would die with it anyway, but one started by another thread would
    wait for its orphan check, and the pipes were left to the finalizers."""
    for child in list(_WORKERS.values()):
        try:
            child.stop()
        except Exception:  # a child that does not end in time: leave it to its orphan check
            pass


def run_isolated(spec: str, graph: Graph, inputs: Mapping[str, np.ndarray] | None = None, runs: int = 2, timeout: float = DEFAULT_TIMEOUT) -> Outcome:
    """``execute_all`` in the worker for ``spec``; after a crash, each configuration
    alone, to name one that crashes and one that does not."""
    child = worker(spec)
    outcome = child.call(graph, inputs, runs, None, timeout)
    if outcome.crash is None:
        return outcome
    from refcompiler.targets import resolve_target

    tries = 2 if outcome.hung else LOCATE_TRIES  # each try of a hang waits the whole timeout
    for config in resolve_target(spec).configurations()[:tries]:
        alone = child.call(graph, inputs, runs, config.key, timeout)
        if alone.crash is not None and outcome.crash_config is None:
            outcome.crash_config, outcome.crash = config.key, f"{config.key}: {alone.crash}"
        elif alone.crash is None and outcome.crash_passing is None:
            outcome.crash_passing = config.key
        if outcome.crash_config and outcome.crash_passing:
            break
    return outcome


def run_target(spec: str, target: Any, graph: Graph, inputs: Mapping[str, np.ndarray] | None, *, isolate: bool, runs: int = 2, timeout: float | None = None) -> Outcome:
    """The target's outcome on ``graph``: in the worker process when ``isolate``,
    else in this process. ``timeout``: seconds per graph, by default the target's
    own ``timeout`` attribute or ``DEFAULT_TIMEOUT``."""
    if timeout is None:
        timeout = target_timeout(target)
    if isolate:
        return run_isolated(spec, graph, inputs, runs, timeout)
    return execute_all(target, graph, inputs, runs)


if __name__ == "__main__":
    serve(sys.argv[1])
