"""Pausing Python's cyclic garbage collector while the compiler works
(``refcompiler.driver`` compiles with it paused), and collecting less often
while a campaign checks cases (``fewer_collections``)."""

from __future__ import annotations

import contextlib
import gc
import threading
from typing import Iterator

__all__ = ["collector_paused", "fewer_collections"]

_pause_lock = threading.Lock()
_pauses = 0  # compilations running with the collector paused
_resume = False  # whether the collector ran when the first of them began

# The youngest generation's threshold within ``fewer_collections`` (Python's default: 700).
YOUNG = 10_000
_spaced = 0  # blocks running under ``fewer_collections``
_threshold: tuple[int, int, int] = (700, 10, 10)  # the thresholds when the first of them began


class _Paused:
    """``collector_paused``'s context manager: a plain class, not a generator,
    since it is entered several times per compilation."""

    __slots__ = ()

    def __enter__(self) -> None:
        global _pauses, _resume
        with _pause_lock:
            if _pauses == 0:
                _resume = gc.isenabled()
                gc.disable()
            _pauses += 1

    def __exit__(self, *exc: object) -> None:
        global _pauses
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()


_PAUSED = _Paused()  # holds no state of its own: one object, entered any number of times


def collector_paused() -> contextlib.AbstractContextManager[None]:
    """Run the block with Python's cyclic garbage collector paused.

    Why: a compilation allocates many objects, most of which live until it
    ends, and the collector's passes over them cost as much as the compilation
    itself on a large graph (O0 at 10k nodes: 0.90 s with it, 0.54 s without)
    and grow faster than linearly. Reference counting still frees what a
    compilation drops; cycles wait for the next collection. Nested and
    concurrent blocks share one pause: the collector resumes when the last
    one ends, and only if it was running when the first one began."""
    return _PAUSED


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the block with the youngest generation collected after ``YOUNG``
    allocations instead of Python's 700 (a threshold of 0, automatic
    collection off, is left as it is).

    Why: a campaign checks thousands of small cases, each allocating and
    dropping many objects, most freed by reference counting at once; with
    the default threshold the collector ran about once per case (1,068
    times in 1,500 cases, about 7% of the campaign's time); so it runs far
    less often (219 times). Cycles are still collected, only later (no object is set
    aside from the collector: ``gc.freeze`` at a chunk's start would keep
    what became garbage during it until a collection between chunks, which
    never comes). Nested and concurrent blocks share one setting, undone
    when the last one ends."""
    global _spaced, _threshold
    with _pause_lock:
        if _spaced == 0:
            _threshold = gc.get_threshold()
            if 0 < _threshold[0] < YOUNG:  # 0: automatic collection is off, and stays off
                gc.set_threshold(YOUNG, *_threshold[1:])
        _spaced += 1
    try:
        yield
    finally:
        with _pause_lock:
            _spaced -= 1
            if _spaced == 0:
                gc.set_threshold(*_threshold)
