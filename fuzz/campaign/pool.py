"""A pool of worker processes in which losing one worker costs only its chunk.

``concurrent.futures.ProcessPoolExecutor`` breaks as a whole when one worker
dies (every pending future fails, the pool is unusable). Here each worker is a
forked process with its own pipe; a worker that dies (SIGKILL, a crash in C
code) fails only the future of the chunk it was running, with ``LostChunk``,
and the next submit starts a fresh worker. ``shutdown`` terminates every
worker, so that none is left running after a campaign, however it ended.

The pool has no threads in the campaign's process: ``poll(timeout)`` (called
by the campaign loop) completes the futures whose worker answered or died. In
each worker a reporter thread sends the running chunk's counts and phase
(``live.Live``) every ``REPORT`` seconds; ``live()`` gives the latest of each
busy worker, so that the display moves, and names the finding being shrunk,
while chunks run. After a signal the campaign asks its busy workers to end
their chunks (``wind_up``: SIGUSR1, on which a running chunk stops at its next
case or shrink attempt, ``live.request_end``), so
that what they checked, a failure being shrunk included, comes back before the
workers are terminated. The request is polled, not raised: an exception raised
from a signal handler may land in a garbage-collector callback or a
finaliser, where Python prints it and drops it.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Callable

from fuzz.campaign.live import Live, forget_running, request_end, running

__all__ = ["LostChunk", "WorkerPool", "REPORT"]

# Seconds between two reports of a worker's running chunk.
REPORT = 0.25


class LostChunk(Exception):
    """The worker running a chunk died before it answered (``died``), or was
    terminated by the campaign (``died=False``: shut down)."""

    def __init__(self, exitcode: int | None, *, died: bool = True):
        super().__init__(f"the worker died (exit code {exitcode})" if died else "the worker was terminated before it answered")
        self.exitcode, self.died = exitcode, died


def _report(conn: Connection, sending: threading.Lock) -> None:
    """The worker's reporter thread: the running chunk's ``Live`` when it changed.
    It holds ``sending`` around each send, as the main thread does around the
    result (after which the chunk is forgotten), so a report never follows the
    result of its chunk and two sends never interleave on the pipe."""
    last = None
    while True:
        time.sleep(REPORT)
        with sending:
            state = running()
            now = state.live() if state is not None else None
            if now is not None and now != last:
                try:
                    conn.send(("live", now))
                except (OSError, ValueError):
                    return
            last = now


# Sent by the campaign to a busy worker after a signal: end the running chunk.
WIND_UP_SIGNAL = signal.SIGUSR1


def _asked_to_end(signum: int, frame: object) -> None:
    # noted even between two calls (a call sent but not yet begun must see it);
    # the campaign never hands a worker another call after asking it to end
    request_end()


def _worker_main(conn: Connection) -> None:
    # Ctrl-C reaches the whole process group; the campaign (the parent) decides
    # what it means: it asks the busy workers to end (WIND_UP_SIGNAL), then
    # terminates them.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(WIND_UP_SIGNAL, _asked_to_end)
    sending = threading.Lock()
    threading.Thread(target=_report, args=(conn, sending), name="refc-fuzz-report", daemon=True).start()
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        fn, args = job
        try:
            answer = (True, fn(*args))
        except BaseException as e:  # sent to the parent, which raises it from result()
            answer = (False, e)
        with sending:
            conn.send(answer)
            forget_running()


@dataclass
class _Worker:
    process: Any
    conn: Connection
    future: Future[Any] | None = field(default=None)
    live: Live | None = field(default=None)  # the running chunk's last report


class WorkerPool(Executor):
    """At most ``workers`` forked worker processes, one call in each at a time."""

    def __init__(self, workers: int):
        self.max_workers = workers
        self.workers: list[_Worker] = []
        self.ctx = mp.get_context("fork")

    def _idle(self) -> _Worker:
        for w in self.workers:
            if w.future is None:
                return w
        if len(self.workers) >= self.max_workers:
            raise RuntimeError("every worker is busy")
        parent, child = self.ctx.Pipe()
        process = self.ctx.Process(target=_worker_main, args=(child,), daemon=True)
        process.start()
        child.close()
        worker = _Worker(process, parent)
        self.workers.append(worker)
        return worker

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        assert not kwargs
        worker = self._idle()
        future: Future[Any] = Future()
        worker.conn.send((fn, args))
        worker.future = future
        return future

    def poll(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for a busy worker to answer or die,
        and complete the futures of those that did."""
        busy = [w for w in self.workers if w.future is not None]
        if not busy:
            return
        ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout))
        for w in busy:
            if w.conn in ready or w.process.sentinel in ready:
                self._collect(w)

    def live(self) -> list[Live]:
        """The latest report of each busy worker's running chunk."""
        return [w.live for w in self.workers if w.future is not None and w.live is not None]

    def _collect(self, w: _Worker) -> None:
        """Read what ``w`` sent: reports, then perhaps its answer (which completes
        its future); a worker that died without answering loses its chunk."""
        assert w.future is not None
        try:
            while True:
                if not w.conn.poll():
                    if w.process.is_alive():
                        return  # only reports so far: the chunk still runs
                    raise EOFError
                message = w.conn.recv()
                if message[0] != "live":
                    break
                w.live = message[1]
        except (EOFError, OSError):
            future, w.future, w.live = w.future, None, None
            w.process.join(1.0)
            future.set_exception(LostChunk(w.process.exitcode))
            self._drop(w)
            return
        future, w.future, w.live = w.future, None, None
        ok, value = message
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def _drop(self, w: _Worker) -> None:
        if w.process.is_alive():
            w.process.kill()
        w.process.join()
        w.conn.close()
        self.workers.remove(w)

    def wind_up(self, seconds: float) -> None:
        """Ask every busy worker to end its call (``WIND_UP_SIGNAL``: a chunk
        then ends as at its deadline) and collect the answers that come within
        ``seconds``; a worker still busy then is left to ``shutdown``."""
        busy = [w for w in self.workers if w.future is not None]
        for w in busy:
            try:
                os.kill(w.process.pid, WIND_UP_SIGNAL)
            except ProcessLookupError:
                pass  # it died: ``poll`` finds its chunk lost
        deadline = time.monotonic() + seconds
        while any(w.future is not None for w in self.workers) and time.monotonic() < deadline:
            self.poll(min(0.2, max(0.0, deadline - time.monotonic())))

    def worker_pids(self) -> list[int]:
        return [w.process.pid for w in self.workers]

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Terminate every worker (a running chunk is lost) and reap it."""
        for w in list(self.workers):
            if w.future is not None and not w.future.done():
                w.future.set_exception(LostChunk(None, died=False))
                w.future = None
            self._drop(w)
