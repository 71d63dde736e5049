"""A per-case time limit for campaigns: a pathological graph becomes a reported
timeout, not a stuck worker.

``time_limit(seconds)`` raises ``CaseTimeout`` inside the block once
``seconds`` of wall-clock time have passed (``SIGALRM`` through
``setitimer``). It works in a process's main thread, which is where a campaign
checks cases (inline, or in a pool worker process); elsewhere it is refused
(``RuntimeError``) rather than silently not limiting. The signal interrupts
Python code between bytecodes; one numpy call runs to its end first, which the
resource limits (``refcompiler.limits``) keep short.
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
from typing import Iterator

__all__ = ["CaseTimeout", "time_limit"]


class CaseTimeout(BaseException):
    """A case ran past its time limit (a finding about the case, not a crash). A
    ``BaseException``, so that the stages' ``except Exception`` (a crash in refc) lets
    it through to the campaign, which reports it."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        # where it struck, when a schedule was being checked (set by the oracle chain):
        # the ``ScheduleChoice`` and the pipeline, so that the stored case replays it
        self.schedule: object | None = None
        self.pipeline: str | None = None
        # (what, blame) when it struck in a user's code, e.g. ("the scheduler m:f (at m.py:3 in f)", "scheduler"):
        # set by ``refcompiler.plugins`` as it passes through the call
        self.within: tuple[str, str] | None = None
        super().__init__(f"the case ran past its time limit of {seconds:g} s")

    @property
    def place(self) -> str:
        """`` in WHAT (at FILE:LINE ...)`` when it struck in a user's code, else empty."""
        return f" in {self.within[0]}" if self.within is not None else ""


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise ``CaseTimeout`` in the block after ``seconds`` (``None``: no limit).
    Restores the previous ``SIGALRM`` handler and timer on the way out."""
    if seconds is None:
        yield
        return
    if not 0 < seconds < math.inf:
        raise ValueError(f"a time limit is a finite number of seconds above 0, got {seconds}")
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("time_limit works only in the main thread (it uses SIGALRM)")

    def expire(signum: int, frame: object) -> None:
        raise CaseTimeout(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
