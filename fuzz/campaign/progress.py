"""Progress of a running campaign: nothing, a plain line every few seconds
and at each change of phase, or a live bar on a terminal, with the running
chunks' own counts and phase (e.g. which finding one is shrinking): with one
in-process worker a ``Ticker`` thread refreshes the display while a chunk runs;
with a pool, the campaign loop does, twice a second, from the workers' reports."""

from __future__ import annotations

import copy
import threading
import time
from typing import Any, Callable, Protocol, Sequence, TextIO

from fuzz.campaign.live import Live
from fuzz.campaign.summary import Summary

__all__ = ["Progress", "NoProgress", "PlainProgress", "RichProgress", "Ticker", "live_view", "TICK"]

# Seconds between two refreshes of the display while an in-process chunk runs.
TICK = 0.25


class Progress(Protocol):
    def update(self, summary: Summary, *, done: bool = False) -> None: ...

    def close(self) -> None: ...


class NoProgress:
    def update(self, summary: Summary, *, done: bool = False) -> None:
        pass

    def close(self) -> None:
        pass


def _status(summary: Summary) -> str:
    cps, sps = summary.rates()
    c = summary.config
    left = []
    if c.budget is not None:
        left.append(f"{max(0.0, c.budget - summary.seconds):.0f}s left")
    if c.max_cases is not None:
        left.append(f"{max(0, c.max_cases - summary.planned)} cases left")
    n = len(summary.lost_chunks)
    lost = f", {n} lost {'chunk' if n == 1 else 'chunks'}" if n else ""
    phase = f"interrupted by {summary.interrupted}" if summary.phase == "done" and summary.interrupted else summary.phase
    return (
        f"{phase}, {summary.seconds:.0f}s elapsed: cases {summary.cases} ({cps:.1f}/s), schedules {summary.schedules} ({sps:.1f}/s), "
        f"failures {summary.failures} ({len(summary.found)} distinct){lost}, {', '.join(left)}"
    )


def _short_status(summary: Summary) -> str:
    """The live line: it must fit a terminal beside the bar and the time left
    (the phase only when it is not the usual one)."""
    cps, sps = summary.rates()
    phase = "" if summary.phase in ("generating", "done", "starting") else f"{summary.phase}; "
    return (
        f"{phase}{summary.cases} cases {cps:.0f}/s, {summary.schedules} sched {sps:.0f}/s, "
        f"{summary.failures} failing ({len(summary.found)} distinct)"
    )


def _phase_kind(phase: str) -> str:
    """The phase without its running figures: ``shrinking X (8 nodes -> 3)`` is ``shrinking X``."""
    return phase.split(" (", 1)[0]


class PlainProgress:
    """One line at most every ``interval`` seconds, one at once when the phase
    changes (e.g. shrinking starts), one when its figures change (``8 nodes
    -> 3``) at most every ``figures`` seconds, and a last one when done. Safe
    to call from the ``Ticker``'s thread and the campaign's at once."""

    def __init__(self, stream: TextIO, interval: float = 5.0, figures: float = 1.0):
        self.stream = stream
        self.interval, self.figures = interval, figures
        self.last = 0.0
        self.phase = ""
        self.lock = threading.Lock()

    def update(self, summary: Summary, *, done: bool = False) -> None:
        with self.lock:
            now, since = time.monotonic(), time.monotonic() - self.last
            changed = _phase_kind(summary.phase) != _phase_kind(self.phase)
            if done or changed or since >= self.interval or (summary.phase != self.phase and since >= self.figures):
                self.last, self.phase = now, summary.phase
                print(f"refc fuzz: {_status(summary)}", file=self.stream, flush=True)

    def close(self) -> None:
        pass


class RichProgress:
    """A live line with a bar on a terminal."""

    def __init__(self, stream: TextIO):
        from rich.console import Console
        from rich.progress import BarColumn, Progress as RichBar, TextColumn, TimeRemainingColumn

        self.bar = RichBar(
            TextColumn("[bold]refc fuzz[/bold] {task.description}"),
            BarColumn(bar_width=16),
            TimeRemainingColumn(),
            console=Console(file=stream),
            transient=False,
        )
        self.task: Any = None
        self.bar.start()

    def update(self, summary: Summary, *, done: bool = False) -> None:
        c = summary.config
        if c.max_cases is not None:
            total, completed = float(c.max_cases), float(summary.planned)
        else:
            total, completed = float(c.budget or 1), summary.seconds
        if self.task is None:
            self.task = self.bar.add_task(_short_status(summary), total=total)
        self.bar.update(self.task, description=_short_status(summary), completed=min(completed, total))

    def close(self) -> None:
        self.bar.stop()


def live_view(summary: Summary, chunks: Sequence[Live]) -> Summary:
    """``summary`` as it would read with the running ``chunks``' counts
    absorbed, and the phase of the first that is shrinking (a copy;
    ``summary`` is left as it is)."""
    view = copy.copy(summary)
    view.seconds = time.time() - summary.start
    for chunk in chunks:
        view.cases += chunk.cases
        view.invalid_cases += chunk.invalid
        view.schedules += chunk.schedules
        view.failures += chunk.failures
    shrinking = [c.phase for c in chunks if c.phase != "generating"]
    if chunks:
        view.phase = shrinking[0] if shrinking else "generating"
    return view


class Ticker:
    """A daemon thread that calls ``progress.update(view())`` every ``period``
    seconds until ``stop()``: the display moves while the campaign's own
    thread is busy in a chunk. It only reads; the chunk runs, and its time
    limit (``SIGALRM``) fires, in the main thread as before."""

    def __init__(self, progress: Progress, view: Callable[[], Summary], period: float = TICK):
        self.progress, self.view, self.period = progress, view, period
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="refc-fuzz-progress", daemon=True)

    def _run(self) -> None:
        while not self.stopped.wait(self.period):
            self.progress.update(self.view())

    def start(self) -> "Ticker":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        if self.thread.is_alive():
            self.thread.join()
