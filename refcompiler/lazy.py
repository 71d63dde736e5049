"""A package's re-exported names, loaded on first use (PEP 562): importing one
light module of a package runs the package's ``__init__`` first, which must
not pay for what its other modules import (numpy, networkx, Z3, Hypothesis).

A package writes its table and takes the two module hooks::

    _LAZY = names(("pkg.module", ("A", "b")), ...)
    __getattr__, __dir__ = exports(__name__, _LAZY, globals())

with the same names under ``if TYPE_CHECKING:`` for type checkers.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Iterable, Mapping

__all__ = ["names", "exports"]

# public name -> (module, attribute); attribute None: the module itself
Table = Mapping[str, "tuple[str, str | None]"]


def names(*groups: tuple[str, Iterable[str]]) -> dict[str, tuple[str, str | None]]:
    """The table of names each defined under its own name in its module."""
    return {name: (module, name) for module, group in groups for name in group}


def exports(package: str, table: Table, namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's ``__getattr__`` and ``__dir__``: a name of ``table`` is
    imported on first use and kept in ``namespace`` (the package's globals);
    any other name is an ``AttributeError``, so that ``from package import
    submodule`` goes on to import the submodule."""

    def __getattr__(name: str) -> Any:
        try:
            module, attribute = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        loaded = importlib.import_module(module)
        value = loaded if attribute is None else getattr(loaded, attribute)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(table))

    return __getattr__, __dir__
