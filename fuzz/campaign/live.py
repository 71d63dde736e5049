"""What the chunk running in this process shows and is asked, apart from the
chunk itself: its counts and phase for the progress display (``Live``, read
through ``running`` while it runs: in the campaign's process with one worker,
see ``runner``; in a pool worker, see ``pool``), and a request to end early
(``request_end``: a worker's wind-up after a signal)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fuzz.campaign.chunk import ChunkState

__all__ = ["Live", "running", "set_running", "forget_running", "request_end", "end_requested", "forget_end"]


@dataclass(frozen=True)
class Live:
    """A running chunk's counts and phase, as the progress display shows them
    (small and picklable: a pool worker sends it to the campaign while its
    chunk runs)."""

    cases: int
    invalid: int
    schedules: int
    failures: int
    phase: str


# The state of the chunk that runs in this process; forgotten once the
# chunk's result is absorbed or sent.
_running: ChunkState | None = None


def running() -> ChunkState | None:
    """The state of the chunk running (or just ended, not yet absorbed) in this process."""
    return _running


def set_running(state: ChunkState) -> None:
    global _running
    _running = state


def forget_running() -> None:
    global _running
    _running = None


# Set by ``request_end``: the chunk running in this process ends at its next
# case or shrink attempt, as at its deadline (a worker's wind-up after a signal).
_end_requested = False


def request_end() -> None:
    """Ask the chunk running in this process to end as soon as it can: it
    checks no more cases, shrinks and reduces no further, and answers with
    what it has (its failure stored as shrunk so far). Safe in a signal handler."""
    global _end_requested
    _end_requested = True


def end_requested() -> bool:
    return _end_requested


def forget_end() -> None:
    """Withdraw ``request_end`` (a campaign's start and end)."""
    global _end_requested
    _end_requested = False
