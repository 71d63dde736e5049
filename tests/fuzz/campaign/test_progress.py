"""Campaign progress: with one in-process worker or a pool the display moves
while chunks run, with their own counts, and names the finding being shrunk;
plain lines come every few seconds and at each change of phase, not at every
update. "At least once a second" is checked as the mechanism that gives it
(the ``Ticker``'s period, the pool loop's wait), not as measured gaps, which
a loaded machine stretches."""

from __future__ import annotations

import io
import re
import threading
from dataclasses import dataclass

import fuzz.campaign.runner as runner
from fuzz.campaign import CampaignConfig, Summary, run_campaign
from fuzz.campaign.live import running
from fuzz.campaign.progress import TICK, PlainProgress, Ticker

SHRINKING = re.compile(r"shrinking (SEM-1 at differential by share_buffers) \((\d+) nodes -> (\d+)\)")


@dataclass(frozen=True)
class Seen:
    thread: str
    phase: str
    cases: int
    in_chunk: bool
    done: bool


class Recorder:
    def __init__(self) -> None:
        self.seen: list[Seen] = []

    def update(self, summary: Summary, *, done: bool = False) -> None:
        self.seen.append(Seen(threading.current_thread().name, summary.phase, summary.cases, running() is not None, done))

    def close(self) -> None:
        pass


class FakeStop:
    """``Ticker.stopped``: ``wait`` records the period asked and reports "set" after ``ticks`` waits."""

    def __init__(self, ticks: int) -> None:
        self.ticks, self.periods = ticks, []

    def wait(self, period: float) -> bool:
        self.periods.append(period)
        return len(self.periods) > self.ticks

    def set(self) -> None:
        self.ticks = 0


def test_the_ticker_refreshes_once_per_period_of_at_most_a_second_until_stopped():
    recorder, views = Recorder(), iter(range(100))
    ticker = Ticker(recorder, lambda: _summary(f"view {next(views)}"))
    ticker.stopped = FakeStop(ticks=5)  # type: ignore[assignment]
    ticker._run()
    assert ticker.stopped.periods == [TICK] * 6 and TICK <= 1.0
    assert [s.phase for s in recorder.seen] == [f"view {i}" for i in range(5)]  # a fresh view each time


class QuickTicker(Ticker):
    """The ``Ticker`` at a period short enough that a chunk of a fraction of a second shows many refreshes."""

    def __init__(self, progress, view, period: float = 0.01):  # type: ignore[no-untyped-def]
        super().__init__(progress, view, period)


def test_one_worker_updates_from_the_ticker_during_a_chunk_and_names_the_finding_it_shrinks(monkeypatch):
    monkeypatch.setattr(runner, "Ticker", QuickTicker)  # as many refreshes as a slow machine's TICK gives a slow chunk
    config = CampaignConfig(budget=None, max_cases=40, chunk_cases=40, seed=0, mutant="share-ignore-later-reads", out=None,
                            stop_on_failure=True, shrink_calls=20, reduce_attempts=30)
    recorder = Recorder()
    summary = run_campaign(config, progress=recorder)
    assert summary.failed and len(summary.found) == 1
    seen = recorder.seen
    assert seen[-1].done and seen[-1].phase == "done"
    # one chunk: every update before it was absorbed came from inside it, with its live
    # counts, refreshed by the ticker's thread while the campaign's own was busy in it
    during = [s for s in seen if s.in_chunk]
    assert {s.thread for s in during} == {"refc-fuzz-progress"}
    # (the first failing case may be the chunk's first: its counts can show only while shrinking)
    assert len(during) >= 4 and any(s.cases > 0 for s in during)
    shrinking = [m for s in during if (m := SHRINKING.fullmatch(s.phase))]
    assert shrinking, {s.phase for s in during}
    first, last = shrinking[0], shrinking[-1]
    assert int(last.group(3)) < int(first.group(2)) == int(last.group(2))  # from the first failing example down
    assert last.group(3) != first.group(2)


def test_with_two_workers_the_display_shows_the_workers_running_chunks_and_the_finding_being_shrunk(monkeypatch):
    waits: list[float] = []
    real_wait = runner._wait

    def wait(pool, pending, timeout):
        waits.append(timeout)
        return real_wait(pool, pending, timeout)

    monkeypatch.setattr(runner, "_wait", wait)
    config = CampaignConfig(budget=None, max_cases=80, chunk_cases=40, seed=2, workers=2, mutant="share-ignore-later-reads", out=None,
                            shrink_calls=20, reduce_attempts=30)
    recorder = Recorder()
    summary = run_campaign(config, progress=recorder)
    assert summary.failed
    seen = recorder.seen
    # the loop waits at most half a second for the workers, then shows their reports
    assert waits and max(waits) <= 0.5 and len(seen) >= len(waits)
    # counts from the workers' reports before any chunk came back, and the shrink by name
    assert any(s.cases > 0 for s in seen[: len(seen) // 2] if not s.done)
    assert any(SHRINKING.fullmatch(s.phase) for s in seen), {s.phase for s in seen}


def _summary(phase: str) -> Summary:
    summary = Summary(CampaignConfig(budget=60.0, out=None))
    summary.phase = phase
    return summary


def test_plain_lines_at_each_change_of_phase_and_every_few_seconds():
    stream = io.StringIO()
    plain = PlainProgress(stream, interval=5.0)
    for phase in ["generating"] * 20 + ["shrinking SCH-1 at compile by scheduler (8 nodes -> 8)",
                                         "shrinking SCH-1 at compile by scheduler (8 nodes -> 3)", "generating"]:
        plain.update(_summary(phase))
    lines = stream.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "refc fuzz: generating", "refc fuzz: shrinking SCH-1 at compile by scheduler (8 nodes -> 8)", "refc fuzz: generating"]
    plain.last -= 5.0
    plain.update(_summary("generating"))  # the interval passed
    plain.update(_summary("shrinking SCH-1 at compile by scheduler (8 nodes -> 8)"))
    plain.update(_summary("shrinking SCH-1 at compile by scheduler (8 nodes -> 5)"))  # figures: not within a second
    plain.last -= 1.0
    plain.update(_summary("shrinking SCH-1 at compile by scheduler (8 nodes -> 3)"))  # a second later: shown
    plain.update(_summary("done"), done=True)
    assert [line.split(",")[0] for line in stream.getvalue().splitlines()[3:]] == [
        "refc fuzz: generating", "refc fuzz: shrinking SCH-1 at compile by scheduler (8 nodes -> 8)",
        "refc fuzz: shrinking SCH-1 at compile by scheduler (8 nodes -> 3)", "refc fuzz: done"]


def test_the_last_line_of_an_interrupted_campaign_says_so():
    stream = io.StringIO()
    summary = _summary("done")
    summary.interrupted = "SIGINT"
    PlainProgress(stream).update(summary, done=True)
    assert stream.getvalue().startswith("refc fuzz: interrupted by SIGINT, ")
