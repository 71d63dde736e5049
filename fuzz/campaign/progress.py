"""Progress of a running campaign: nothing, a plain line every few seconds,
or a live bar on a terminal."""

from __future__ import annotations

import time
from typing import Any, Protocol, TextIO

from fuzz.campaign.summary import Summary

__all__ = ["Progress", "NoProgress", "PlainProgress", "RichProgress"]


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
    return (
        f"{summary.phase}, {summary.seconds:.0f}s elapsed: cases {summary.cases} ({cps:.1f}/s), schedules {summary.schedules} ({sps:.1f}/s), "
        f"failures {summary.failures} ({len(summary.found)} distinct){lost}, {', '.join(left)}"
    )


def _short_status(summary: Summary) -> str:
    """The live line: it must fit a terminal beside the bar and the time left."""
    cps, sps = summary.rates()
    return (
        f"{summary.cases} cases {cps:.0f}/s, {summary.schedules} sched {sps:.0f}/s, "
        f"{summary.failures} failing ({len(summary.found)} distinct)"
    )


class PlainProgress:
    """One line at most every ``interval`` seconds, and a last one when done."""

    def __init__(self, stream: TextIO, interval: float = 5.0):
        self.stream = stream
        self.interval = interval
        self.last = 0.0

    def update(self, summary: Summary, *, done: bool = False) -> None:
        now = time.monotonic()
        if done or now - self.last >= self.interval:
            self.last = now
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
