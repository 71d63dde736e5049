"""Pausing Python's cyclic garbage collector while the compiler works
(``refcompiler.driver`` compiles with it paused)."""

from __future__ import annotations

import contextlib
import gc
import threading
from typing import Iterator

__all__ = ["collector_paused"]

_pause_lock = threading.Lock()
_pauses = 0  # compilations running with the collector paused
_resume = False  # whether the collector ran when the first of them began


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with Python's cyclic garbage collector paused.

    Why: a compilation allocates many objects, most of which live until it
    ends, and the collector's passes over them cost as much as the compilation
    itself on a large graph (O0 at 10k nodes: 0.90 s with it, 0.54 s without)
    and grow faster than linearly. Reference counting still frees what a
    compilation drops; cycles wait for the next collection. Nested and
    concurrent blocks share one pause: the collector resumes when the last
    one ends, and only if it was running when the first one began."""
    global _pauses, _resume
    with _pause_lock:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()
