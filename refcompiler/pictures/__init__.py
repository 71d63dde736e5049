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

from typing import TYPE_CHECKING

from refcompiler.lazy import exports as _exports, names as _names

if TYPE_CHECKING:
    from refcompiler.pictures.graph import graph_dot
    from refcompiler.pictures.program import program_dot
    from refcompiler.pictures.render import PictureFormat, have_dot, render
    from refcompiler.pictures.schedules import case_dot, counterexample_dot
    from refcompiler.pictures.timeline import arena_svg

__all__ = ["graph_dot", "program_dot", "case_dot", "counterexample_dot", "arena_svg", "PictureFormat", "render", "have_dot"]

# public name -> (module, attribute)
_LAZY = _names(
    ("refcompiler.pictures.graph", ("graph_dot",)),
    ("refcompiler.pictures.program", ("program_dot",)),
    ("refcompiler.pictures.render", ("PictureFormat", "have_dot", "render")),
    ("refcompiler.pictures.schedules", ("case_dot", "counterexample_dot")),
    ("refcompiler.pictures.timeline", ("arena_svg",)),
)
__getattr__, __dir__ = _exports(__name__, _LAZY, globals())
