"""The mutant catalog (DESIGN §9): named, deliberately wrong variants of the compiler.

Each mutant replaces one swap point (``refcompiler.variants``) with a wrong
variant; ``activate(name)`` installs it for a block. Nothing here is active
by default.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from refcompiler.errors import UsageError
from refcompiler.variants import installed

__all__ = ["Mutant", "CATALOG", "activate", "get"]


@dataclass(frozen=True)
class Mutant:
    name: str
    component: str
    bug_class: str
    description: str
    # swap point (a @swappable function, or its key) -> the wrong replacement;
    # a callable so that the modules it touches are imported only when needed
    replacements: Callable[[], dict[Any, Callable[..., Any]]]


CATALOG: dict[str, Mutant] = {}


def get(name: str) -> Mutant:
    try:
        return CATALOG[name]
    except KeyError:
        known = ", ".join(sorted(CATALOG)) or "none"
        raise UsageError(f"unknown mutant {name!r} (known: {known})") from None


@contextlib.contextmanager
def activate(name: str | None) -> Iterator[None]:
    """Run the block with mutant ``name`` installed (``None``: the correct compiler)."""
    if name is None:
        yield
        return
    with installed(get(name).replacements()):
        yield
