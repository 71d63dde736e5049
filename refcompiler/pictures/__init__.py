"""Pictures: graphs, counterexamples, corpus cases and compiled programs.

Graphviz DOT text is made here by plain functions (``graph_dot``,
``counterexample_dot``, ``case_dot``, ``program_dot``) and rendered to SVG or
PNG by the ``dot`` program (``render``); the arena timeline is SVG drawn
directly (``arena_svg``). ``refc show``, ``refc prove``, ``refc compile`` and
``refc report`` are their users.

The names load on first use (PEP 562), so that ``--format``'s choices
(``PictureFormat``, in the light ``render``) cost the command line nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from refcompiler.pictures.graph import graph_dot
    from refcompiler.pictures.program import program_dot
    from refcompiler.pictures.render import PictureFormat, have_dot, render
    from refcompiler.pictures.schedules import case_dot, counterexample_dot
    from refcompiler.pictures.timeline import arena_svg

__all__ = ["graph_dot", "program_dot", "case_dot", "counterexample_dot", "arena_svg", "PictureFormat", "render", "have_dot"]

# public name -> the module that defines it
_LAZY: dict[str, str] = {
    name: module
    for module, names in (
        ("refcompiler.pictures.graph", ("graph_dot",)),
        ("refcompiler.pictures.program", ("program_dot",)),
        ("refcompiler.pictures.render", ("PictureFormat", "have_dot", "render")),
        ("refcompiler.pictures.schedules", ("case_dot", "counterexample_dot")),
        ("refcompiler.pictures.timeline", ("arena_svg",)),
    )
    for name in names
}


def __getattr__(name: str) -> Any:
    # an unknown name is an AttributeError, so that ``from refcompiler.pictures
    # import svg`` goes on to import the submodule
    try:
        module = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'refcompiler.pictures' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
