"""A chunk's cases depend on its seed and config only.

Hypothesis (6.131 on) sometimes draws constants it collects from the source of
the *local* modules loaded in the process (``hypothesis.internal.conjecture
.providers``), so the same seed draws different cases in a process that has
imported more of refc (the CLI imports every command) than another (a Dask
worker, a test). ``no_local_constants()`` keeps that pool empty while a chunk
runs, so that a count-bounded campaign repeats in any process. Hypothesis's
module-wide state is swapped, not a setting (there is none): the swap is
reference-counted under a lock, and nothing changes on versions without it.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

__all__ = ["no_local_constants"]

_lock = threading.Lock()
_depth = 0
_saved: Any = None


def _providers() -> Any:
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - an older Hypothesis
        return None
    needed = ("_get_local_constants", "CONSTANTS_CACHE", "Constants")
    return providers if all(hasattr(providers, name) for name in needed) else None


def _clear_cache(providers: Any) -> None:
    # the cache of permitted constants holds local ones drawn before the swap
    cache = providers.CONSTANTS_CACHE
    getattr(cache, "cache", cache).clear()


@contextlib.contextmanager
def no_local_constants() -> Iterator[None]:
    """While inside, Hypothesis draws no constants from local modules."""
    global _depth, _saved
    providers = _providers()
    if providers is None:
        yield
        return
    with _lock:
        if _depth == 0:
            _saved = providers._get_local_constants
            empty = providers.Constants()
            providers._get_local_constants = lambda: empty
            _clear_cache(providers)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                providers._get_local_constants = _saved
                _clear_cache(providers)
