"""The campaign loop: hand chunks to an executor, absorb their results.

One loop for every kind of execution: chunks run in this process (one
worker: ``InlineExecutor``, which runs a chunk when it is submitted), in a
``WorkerPool`` (losing a worker loses only its chunk), or in any executor with
the same ``submit`` protocol passed in, e.g. a Dask cluster's
(``fuzz.campaign.cluster``). Count-bounded (no budget), each chunk depends on
its index only and the summary on the set of chunk results, not on the order
they end in: the same seed and count give the same summary with any executor.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from typing import Any, Callable, Iterator

from fuzz.campaign.cases import chunk_seed
from fuzz.campaign.chunk import Chunk, ChunkInterrupted, ChunkResult, continuation, run_chunk
from fuzz.campaign.live import end_requested, forget_end, forget_running, request_end, running
from fuzz.campaign.config import HARD_GRACE, CampaignConfig
from fuzz.campaign.pool import LostChunk, WorkerPool
from fuzz.campaign.progress import NoProgress, Progress, Ticker, live_view
from fuzz.campaign.summary import Summary
from refcompiler.collector import fewer_collections

__all__ = ["InlineExecutor", "run_campaign", "HARD_GRACE"]

# Seconds a campaign waits after a signal for its workers' running chunks to
# end and send what they checked (a failure found is stored as shrunk so far).
WIND_UP = 10.0


class InlineExecutor(Executor):
    """Runs each submitted call at once, in the calling process, and returns
    its future already done."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as e:  # the caller's result() raises it, as with a pool
            future.set_exception(e)
        return future


def _next_chunk(config: CampaignConfig, summary: Summary, index: int) -> Chunk | None:
    """The next chunk to run, or ``None`` when the budget is spent."""
    if config.stop_on_failure and summary.killed:
        return None
    cases = config.chunk_cases
    if config.max_cases is not None:
        remaining = config.max_cases - summary.planned
        if remaining <= 0:
            return None
        cases = min(cases, remaining)
    deadline = None
    if config.budget is not None:
        deadline = summary.start + config.budget
        if time.time() >= deadline:
            return None
    # Count-bounded, a chunk depends on its index only (not on which chunks ended
    # before it was made), so the summary is the same with any executor or workers.
    known = frozenset(summary.found) if config.budget is not None else frozenset()
    return Chunk(index, chunk_seed(config.seed, index), cases, config, known, deadline)


def _wait(pool: Executor, pending: set[Future[ChunkResult]], timeout: float) -> set[Future[ChunkResult]]:
    if isinstance(pool, WorkerPool):
        pool.poll(timeout)
        return {f for f in pending if f.done()}
    return wait(pending, timeout=timeout, return_when=FIRST_COMPLETED).done


# Held while a chunk's result is absorbed and its live state forgotten, and while
# the progress ``Ticker`` reads both: a chunk is counted once, never twice or not at all.
_absorbing = threading.Lock()


def _absorb(summary: Summary, chunk: Chunk, fut: Future[ChunkResult]) -> bool:
    """Add the chunk's result to ``summary``; whether a signal had cut the
    chunk short (``ChunkInterrupted``: what it checked counts all the same)."""
    with _absorbing:
        try:
            summary.absorb(fut.result())
        except ChunkInterrupted as e:
            summary.absorb(e.result)
            return True
        except LostChunk as e:
            summary.lost_chunks.append({"chunk": chunk.index, "cases": chunk.cases, "reason": str(e),
                                        "kind": "died" if e.died else "deadline"})
        finally:
            forget_running()
    return False


def _wind_up(summary: Summary, pool: Executor, pending: dict[Future[ChunkResult], Chunk]) -> None:
    """After a signal: the pool's running chunks are asked to end
    (``WorkerPool.wind_up``), and what each checked, its failure included, is
    absorbed; a chunk that does not answer in time is lost with its worker."""
    if isinstance(pool, WorkerPool) and pending:
        pool.wind_up(WIND_UP)
    for fut in [f for f in pending if f.done()]:
        _absorb(summary, pending.pop(fut), fut)


def _live(summary: Summary) -> Summary:
    """The summary with the in-process chunk's counts and phase (for the ``Ticker``)."""
    with _absorbing:
        state = running()
        return live_view(summary, [state.live()] if state is not None else [])


def _loop(
    config: CampaignConfig,
    summary: Summary,
    pool: Executor,
    progress: Progress,
    on_change: Callable[[Summary], None],
    held: Callable[[], contextlib.AbstractContextManager[None]],
) -> None:
    """Keep ``config.workers`` chunks in flight until the budget is spent; a
    chunk is made when a worker is free, from what is known by then. Past the
    hard deadline (budget + ``shrink_grace`` + ``HARD_GRACE``) the chunks still
    running are abandoned (their workers are terminated by the caller). A
    chunk is handed to a pool and absorbed inside ``held()``: a signal then
    takes effect after it, never halfway; the chunks running then are wound
    up (``_wind_up``) and the signal goes on up."""
    index = 0
    # inline, submitting is running the chunk: a signal must break into it
    handing = contextlib.nullcontext if isinstance(pool, InlineExecutor) else held
    hard = None if config.budget is None else summary.start + config.budget + config.shrink_grace + HARD_GRACE
    pending: dict[Future[ChunkResult], Chunk] = {}
    rest: list[Chunk] = []  # continuations of chunks that stopped at a failure (planned already)
    try:
        while True:
            while len(pending) < config.workers:
                going_on = rest and not (config.stop_on_failure and summary.killed)
                chunk = rest.pop(0) if going_on else _next_chunk(config, summary, index)
                if chunk is None:
                    break
                if chunk.part == 0:  # a continuation's cases were planned with its chunk
                    summary.planned += chunk.cases
                    index += 1
                summary.phase = "generating"
                with handing():  # a worker started is one the pool knows (and terminates)
                    pending[pool.submit(run_chunk, chunk)] = chunk
            if not pending:
                return
            for fut in _wait(pool, set(pending), 0.5):
                chunk = pending.pop(fut)
                with held():
                    # a chunk of this process that a signal cut short, or ended at its
                    # next case (the signal's exception was lost in a finaliser: ``_Signals``)
                    if _absorb(summary, chunk, fut) or end_requested():
                        raise KeyboardInterrupt
                after = continuation(chunk, fut.result()) if fut.exception() is None else None
                if after is not None:
                    rest.append(after)
                on_change(summary)
            if hard is not None and time.time() >= hard and pending:
                for chunk in pending.values():
                    summary.lost_chunks.append({"chunk": chunk.index, "cases": chunk.cases, "reason": "still running at the hard deadline",
                                                "kind": "deadline"})
                return
            summary.seconds = time.time() - summary.start
            progress.update(live_view(summary, pool.live()) if isinstance(pool, WorkerPool) else summary)
    except KeyboardInterrupt:
        _wind_up(summary, pool, pending)
        raise


def _stopped_by(config: CampaignConfig, summary: Summary) -> str:
    if summary.interrupted:
        return "interrupted"
    if config.stop_on_failure and summary.killed:
        return "failure"
    if config.max_cases is not None and summary.planned >= config.max_cases:
        return "cases"
    return "budget"


class _Signals:
    """While a campaign runs in the main thread: SIGTERM, like SIGINT, raises
    ``KeyboardInterrupt``; ``received`` says which came first. Only the first
    signal raises: a second one (a double Ctrl-C) must not break into the
    wind-down, which never waits on a running chunk (the workers are
    terminated) and ends by writing the final summary; later signals are only
    counted (``count``). Inside ``held()`` a first signal is deferred to the
    block's end, so that a chunk is absorbed (or handed out) whole.

    The first signal also asks the chunk running in this process, if any, to
    end (``live.request_end``): an exception raised from a signal handler can
    land in a garbage-collector callback or a finaliser, where Python drops it
    (``sys.unraisablehook``, which says nothing of a ``KeyboardInterrupt`` while
    the campaign runs); the chunk then ends at its next case instead."""

    def __init__(self) -> None:
        self.received: str | None = None
        self.count = 0
        self.saved: dict[int, Any] = {}
        self._holding = 0
        self._deferred = False
        self._unraisable: Any = None

    def _handler(self, signum: int, frame: Any) -> None:
        self.count += 1
        if self.received is not None:
            return
        self.received = signal.Signals(signum).name
        request_end()
        if self._holding:
            self._deferred = True
            return
        raise KeyboardInterrupt

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1
        if self._deferred and not self._holding:
            self._deferred = False
            raise KeyboardInterrupt

    def __enter__(self) -> "_Signals":
        forget_end()
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                # one ignored by whoever started refc (nohup; `refc fuzz &` in a script) stays ignored:
                # a Ctrl-C meant for the foreground ended a campaign run in the background
                if signal.getsignal(sig) is not signal.SIG_IGN:
                    self.saved[sig] = signal.signal(sig, self._handler)
            self._unraisable, sys.unraisablehook = sys.unraisablehook, self._quiet_interrupt
        return self

    def _quiet_interrupt(self, unraisable: Any) -> None:
        if self.received is not None and isinstance(unraisable.exc_value, KeyboardInterrupt):
            return  # ours, dropped in a finaliser: ``request_end`` stands in for it
        self._unraisable(unraisable)

    def __exit__(self, *exc: object) -> None:
        for sig, old in self.saved.items():
            signal.signal(sig, old)
        if self._unraisable is not None:
            sys.unraisablehook = self._unraisable
        forget_end()  # the next campaign in this process starts unasked


def run_campaign(
    config: CampaignConfig,
    *,
    executor: Executor | None = None,
    progress: Progress | None = None,
    on_change: Callable[[Summary], None] | None = None,
) -> Summary:
    """Run a campaign and return its summary. ``on_change(summary)`` is called
    after every chunk (the CLI writes the outputs there, so that a finding is
    on disk as soon as its chunk ends) and once at the end. With one worker and
    no ``executor``, chunks run in this process, in order; otherwise
    ``config.workers`` chunks are in flight at once in ``executor`` (default: a
    ``WorkerPool`` of that many processes). SIGINT or SIGTERM ends the
    campaign: the workers are terminated, and the summary says
    ``interrupted`` with the signal's name (a second signal does not break
    into that: the final summary is still written). With chunks in this
    process, a ``Ticker`` thread refreshes ``progress`` while each runs (its
    counts, and which finding it is shrinking)."""
    progress = progress or NoProgress()
    on_change = on_change or (lambda summary: None)
    summary = Summary(config)
    own = executor is None
    if executor is None:
        executor = InlineExecutor() if config.workers == 1 else WorkerPool(config.workers)
    live = isinstance(executor, InlineExecutor) and not isinstance(progress, NoProgress)
    ticker = Ticker(progress, lambda: _live(summary)) if live else None
    with _Signals() as signals:
        try:
            if ticker is not None:
                ticker.start()
            with fewer_collections():  # between chunks too (an in-process chunk's own block is then nested)
                _loop(config, summary, executor, progress, on_change, signals.held)
        except KeyboardInterrupt:
            summary.interrupted = signals.received or "SIGINT"
        finally:
            if ticker is not None:
                ticker.stop()
            forget_running()
            if own:
                executor.shutdown(wait=True, cancel_futures=True)
            summary.seconds = time.time() - summary.start
            summary.stopped_by = _stopped_by(config, summary)
            summary.phase = "done"
            on_change(summary)
            progress.update(summary, done=True)
            progress.close()
    return summary
