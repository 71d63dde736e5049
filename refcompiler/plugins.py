"""A user's code: loading it as ``module:attribute`` (a scheduler, a pipeline)
and calling it as untrusted code."""

from __future__ import annotations

import importlib
from typing import Callable

from refcompiler.errors import ExecutionError, RefCompilerError, UsageError

__all__ = ["load_attribute", "call_untrusted"]


def load_attribute(spec: str, what: str) -> object:
    """The object ``spec`` (``module:attribute``) names; ``UsageError`` naming
    ``what`` (e.g. "scheduler") when it cannot be imported or found."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise UsageError(f"{what} {spec!r}: expected module:attribute")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise UsageError(f"{what} {spec!r}: cannot import module {module_name!r} ({e})") from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise UsageError(f"{what} {spec!r}: module {module_name!r} has no attribute {attribute!r}") from None


def call_untrusted(fn: Callable[..., object], what: str, *args: object) -> object:
    """``fn(*args)``, where ``fn`` is a user's code described by ``what`` (e.g.
    "the scheduler my_sched.schedule", "pass my_pass"). An exception it raises is
    a finding about it (``ExecutionError``, exit 1), not a bug in refc; a
    ``RefCompilerError`` passes through as it is."""
    try:
        return fn(*args)
    except RefCompilerError:
        raise
    except Exception as e:
        raise ExecutionError(f"{what} raised {type(e).__name__}: {e}") from None
