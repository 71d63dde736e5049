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
