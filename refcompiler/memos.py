"""The caches of what refc derives from graph and program objects (effects,
dependency models, analyses, pass results, allocations, execution plans,
layouts, verdicts), in one list, so that a campaign can empty them between
its cases (``forget``).

Each of those caches is bounded, keyed by the objects it holds (most by
their identity), and a pure memo: emptying one costs only a miss later. Why a campaign
empties them: a case's graphs and programs die with the case unless a cache
holds them, and these held up to thousands, across hundreds of cases. Python's
cyclic collector went over every object so held, in each generation it passed
through (about 17,000 young objects per collection; 4 to 5% of a campaign's
time, 0.3% once they are emptied between cases, and a campaign ran 8% faster).
A cache whose entries are functions of small values (an op and its attributes)
and serve every graph alike is not listed.
"""

from __future__ import annotations

import threading
from typing import Callable, Protocol, TypeVar

__all__ = ["kept", "on_forget", "forget"]


class _Clearable(Protocol):
    def clear(self) -> None: ...


C = TypeVar("C", bound=_Clearable)

_CLEARS: list[Callable[[], None]] = []
_lock = threading.Lock()


def kept(cache: C) -> C:
    """List ``cache`` (a dict, an ``ir.IdentityTable``, anything with
    ``clear()``) among those ``forget`` empties; returns it."""
    on_forget(cache.clear)
    return cache


def on_forget(clear: Callable[[], None]) -> None:
    """Call ``clear`` on ``forget``: for a cache that must be emptied under its
    own lock, or that is replaced rather than emptied."""
    with _lock:
        _CLEARS.append(clear)


def forget() -> None:
    """Empty every cache listed (``kept``, ``on_forget``). Safe while other
    threads use them: each is emptied as when it is full."""
    with _lock:
        clears = list(_CLEARS)
    for clear in clears:
        clear()
