"""The campaign loop: hand chunks to an executor, absorb their results.

One loop for every kind of execution: chunks run in this process (one
worker: ``InlineExecutor``, which runs a chunk when it is submitted), in a
``concurrent.futures.ProcessPoolExecutor``, or in any executor with the same
``submit`` protocol passed in, e.g. a Dask ``Client.get_executor()``.
"""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from typing import Any, Callable

from fuzz.campaign.cases import chunk_seed
from fuzz.campaign.chunk import Chunk, ChunkResult, run_chunk
from fuzz.campaign.config import CampaignConfig
from fuzz.campaign.progress import NoProgress, Progress
from fuzz.campaign.summary import Summary

__all__ = ["InlineExecutor", "run_campaign"]


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
    return Chunk(index, chunk_seed(config.seed, index), cases, config, frozenset(summary.found), deadline)


def _loop(config: CampaignConfig, summary: Summary, pool: Executor, progress: Progress) -> None:
    """Keep ``config.workers`` chunks in flight until the budget is spent; a
    chunk is made when a worker is free, from what is known by then."""
    index = 0
    pending: set[Future[ChunkResult]] = set()
    while True:
        while len(pending) < config.workers and (chunk := _next_chunk(config, summary, index)) is not None:
            summary.planned += chunk.cases
            index += 1
            pending.add(pool.submit(run_chunk, chunk))
        if not pending:
            return
        done, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
        for fut in done:
            summary.absorb(fut.result())
        summary.seconds = time.time() - summary.start
        progress.update(summary)


def _stopped_by(config: CampaignConfig, summary: Summary) -> str:
    if config.stop_on_failure and summary.killed:
        return "failure"
    if config.max_cases is not None and summary.planned >= config.max_cases:
        return "cases"
    return "budget"


def run_campaign(config: CampaignConfig, *, executor: Executor | None = None, progress: Progress | None = None) -> Summary:
    """Run a campaign and return its summary (nothing is written; see
    ``write_outputs``). With one worker and no ``executor``, chunks run in
    this process, in order; otherwise ``config.workers`` chunks are in flight
    at once in ``executor`` (default: a process pool of that many workers)."""
    progress = progress or NoProgress()
    summary = Summary(config)
    own = executor is None
    if executor is None:
        executor = InlineExecutor() if config.workers == 1 else ProcessPoolExecutor(max_workers=config.workers)
    try:
        _loop(config, summary, executor, progress)
    finally:
        if own:
            executor.shutdown(wait=True, cancel_futures=True)
        summary.seconds = time.time() - summary.start
        summary.stopped_by = _stopped_by(config, summary)
        progress.update(summary, done=True)
        progress.close()
    return summary
