"""A user's code: loading it as ``module:attribute`` (a scheduler, a pipeline)
and calling it as untrusted code."""

from __future__ import annotations

import importlib
import os
import sys
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
        module = _import(module_name)
    except ImportError as e:
        raise UsageError(f"{what} {spec!r}: cannot import module {module_name!r} ({e})") from None
    except SyntaxError as e:
        raise UsageError(f"{what} {spec!r}: module {module_name!r} has a syntax error ({e.filename}:{e.lineno}: {e.msg})") from None
    except SystemExit as e:
        raise UsageError(f"{what} {spec!r}: module {module_name!r} called sys.exit({e.code!r}) while being imported") from None
    except Exception as e:
        raise UsageError(f"{what} {spec!r}: importing module {module_name!r} raised {type(e).__name__}: {_short(e)}") from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise UsageError(f"{what} {spec!r}: module {module_name!r} has no attribute {attribute!r}") from None


def _short(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= 200 else text[:197] + "..."


def _import(module_name: str) -> object:
    """Import a user's module: from ``sys.path``, or else from the current
    directory. The current directory is searched last and only for this
    module, so that a ``fuzz.py`` or ``specs.py`` there never shadows refc's own."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        top = module_name.partition(".")[0]
        if e.name != top or os.getcwd() in sys.path:
            raise
    cwd = os.getcwd()
    sys.path.append(cwd)
    try:
        return importlib.import_module(module_name)
    finally:
        sys.path.remove(cwd)


def call_untrusted(fn: Callable[..., object], what: str, *args: object) -> object:
    """``fn(*args)``, where ``fn`` is a user's code described by ``what`` (e.g.
    "the scheduler my_sched.schedule", "pass my_pass"). An exception it raises is
    a finding about it (``ExecutionError``, exit 1), not a bug in refc; a
    ``RefCompilerError`` passes through as it is."""
    try:
        return fn(*args)
    except RefCompilerError:
        raise
    except SystemExit as e:  # a user's sys.exit must not end refc (or a campaign)
        raise ExecutionError(f"{what} called sys.exit({e.code!r})") from None
    except Exception as e:
        raise ExecutionError(f"{what} raised {type(e).__name__}: {_short(e)}") from None
