"""Loading a user's code named as ``module:attribute`` (a scheduler, a pipeline)."""

from __future__ import annotations

import importlib

from refcompiler.errors import UsageError

__all__ = ["load_attribute"]


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
