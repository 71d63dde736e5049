"""Swap points: the one mechanism by which a mutant (DESIGN §9) changes the compiler.

A function decorated with ``@swappable`` runs as written unless a replacement
is installed for it with ``installed({...})`` (a context manager, scoped to the
current thread or task through a ``ContextVar``). The correct code carries no
mutant names and no ``if mutant`` checks; ``refcompiler.mutants`` holds the
catalog of replacements.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from contextvars import ContextVar
from typing import Any, Callable, Iterator, Mapping, TypeVar

__all__ = ["swappable", "installed", "key_of", "registry", "active", "replaced"]

F = TypeVar("F", bound=Callable[..., Any])

_active: ContextVar[Mapping[str, Callable[..., Any]]] = ContextVar("refc_swaps", default={})
_registry: dict[str, Callable[..., Any]] = {}

# ``installed`` blocks open now, in any thread or task: while there are none, no
# context's table holds a replacement (refc copies no context that outlives its
# block), and a swap point calls its function without looking (a campaign's
# swap points were called 150,000 times per 1,000 cases); ``Node.spec`` reads it too
installing = 0
_installing_lock = threading.Lock()


def key_of(fn: Callable[..., Any]) -> str:
    return getattr(fn, "swap_key", f"{fn.__module__}.{fn.__qualname__}")


def swappable(fn: F) -> F:
    """Mark ``fn`` as a point a mutant may replace. The wrapper calls ``fn`` by default."""
    key = key_of(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if installing:  # else no table holds a replacement: the common, hot path
            impl = _active.get().get(key)
            if impl is not None:
                return impl(*args, **kwargs)
        return fn(*args, **kwargs)

    wrapper.swap_key = key  # type: ignore[attr-defined]
    wrapper.original = fn  # type: ignore[attr-defined]
    _registry[key] = wrapper
    return wrapper  # type: ignore[return-value]


def active() -> Mapping[str, Callable[..., Any]]:
    """The replacements installed in the current context (do not modify). The
    same object for as long as no ``installed`` block is entered or left, so a
    cache of a swappable computation may key on its identity."""
    return _active.get()


def replaced(fn: Callable[..., Any]) -> bool:
    """Whether swap point ``fn`` is replaced in the current context: a caller
    that computes what ``fn`` computes in a faster way of its own must then
    call ``fn`` instead."""
    return key_of(fn) in _active.get()


def registry() -> dict[str, Callable[..., Any]]:
    """Every swap point by key (modules register theirs when imported)."""
    return dict(_registry)


@contextlib.contextmanager
def installed(replacements: Mapping[Callable[..., Any] | str, Callable[..., Any]]) -> Iterator[None]:
    """Run the block with the given swap points replaced."""
    table = dict(_active.get())
    for point, impl in replacements.items():
        key = point if isinstance(point, str) else key_of(point)
        table[key] = impl
    global installing
    token = _active.set(table)
    with _installing_lock:
        installing += 1
    try:
        yield
    finally:
        with _installing_lock:
            installing -= 1
        _active.reset(token)
