"""The worker pool: a dead worker costs only its own call; none is left running."""

from __future__ import annotations

import os
import signal
import time

import pytest

from fuzz.campaign.pool import LostChunk, WorkerPool


def _square(x: int) -> int:
    return x * x


def _die(_: int) -> int:
    os.kill(os.getpid(), signal.SIGKILL)
    return 0


def _raise(_: int) -> int:
    raise ValueError("from the worker")


def _done(pool: WorkerPool, futures: list) -> None:
    deadline = time.time() + 30
    while not all(f.done() for f in futures):
        assert time.time() < deadline
        pool.poll(0.5)


def test_a_killed_worker_fails_only_its_own_future_and_is_replaced():
    pool = WorkerPool(2)
    try:
        dead, alive = pool.submit(_die, 1), pool.submit(_square, 7)
        _done(pool, [dead, alive])
        assert alive.result() == 49
        with pytest.raises(LostChunk, match="exit code -9"):
            dead.result()
        again = pool.submit(_square, 3)
        _done(pool, [again])
        assert again.result() == 9
    finally:
        pool.shutdown()


def test_an_exception_in_a_worker_comes_out_of_result():
    pool = WorkerPool(1)
    try:
        fut = pool.submit(_raise, 0)
        _done(pool, [fut])
        with pytest.raises(ValueError, match="from the worker"):
            fut.result()
    finally:
        pool.shutdown()


def test_shutdown_terminates_busy_workers():
    pool = WorkerPool(2)
    futures = [pool.submit(time.sleep, 60), pool.submit(time.sleep, 60)]
    pids = pool.worker_pids()
    pool.shutdown()
    assert pool.workers == []
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    for f in futures:
        with pytest.raises(LostChunk):
            f.result()


def _busy_chunk(seconds: float) -> int:
    # what a chunk does in a worker: its state is what running() returns
    from fuzz.campaign.chunk import ChunkState
    from fuzz.campaign.live import set_running

    state = ChunkState(cases=7, schedules=21)
    set_running(state)
    time.sleep(seconds)
    state.cases = 9
    time.sleep(seconds)
    return 5


def test_a_busy_worker_reports_its_running_chunk_and_never_after_its_answer():
    pool = WorkerPool(1)
    try:
        fut = pool.submit(_busy_chunk, 1.0)
        seen = []
        deadline = time.time() + 30
        while not fut.done():
            assert time.time() < deadline
            pool.poll(0.1)
            seen += [(r.cases, r.schedules, r.phase) for r in pool.live()]
        assert (7, 21, "generating") in seen and (9, 21, "generating") in seen
        assert fut.result() == 5 and pool.live() == []
        square = pool.submit(_square, 3)
        time.sleep(3 * 0.25)  # the worker forgot the chunk with its answer: no stale report
        _done(pool, [square])
        assert square.result() == 9
        pool.poll(0.1)
        assert pool.live() == []
    finally:
        pool.shutdown()


def _violate(_: int) -> int:
    from refcompiler.errors import InvariantViolation

    raise InvariantViolation("G-1", "node 'r' input 0 is int32, needs float32", names=("r",), stage="after pass p", instruction=2)


def test_an_invariant_violation_raised_in_a_worker_reaches_the_campaign_whole():
    # it crossed the pipe by pickle, which could not rebuild it (exit 4 instead of the error)
    from refcompiler.errors import InvariantViolation

    pool = WorkerPool(1)
    try:
        fut = pool.submit(_violate, 0)
        _done(pool, [fut])
        with pytest.raises(InvariantViolation) as caught:
            fut.result()
        e = caught.value
        assert (e.invariant, e.names, e.stage, e.instruction) == ("G-1", ("r",), "after pass p", 2)
        assert str(e) == "after pass p: G-1: node 'r' input 0 is int32, needs float32"
    finally:
        pool.shutdown()


def _until_asked(x: int) -> str:
    from fuzz.campaign.live import end_requested

    deadline = time.monotonic() + 60
    while not end_requested() and time.monotonic() < deadline:
        time.sleep(0.01)
    return f"ended early with {x}" if end_requested() else "never asked"


def test_wind_up_asks_busy_workers_to_end_and_collects_their_answers():
    pool = WorkerPool(2)
    try:
        busy, quick = pool.submit(_until_asked, 4), pool.submit(_square, 5)
        _done(pool, [quick])
        time.sleep(0.3)  # the busy one is asleep in its call by now
        started = time.monotonic()
        pool.wind_up(10.0)
        assert busy.done() and busy.result() == "ended early with 4"
        assert time.monotonic() - started < 5.0
        again = pool.submit(_square, 6)  # the idle worker was not asked: it takes the next call
        _done(pool, [again])
        assert again.result() == 36
    finally:
        pool.shutdown()
