"""Pictures: graphs, counterexamples, corpus cases and compiled programs.

Graphviz DOT text is made here by plain functions (``graph_dot``,
``counterexample_dot``, ``case_dot``, ``program_dot``) and rendered to SVG or
PNG by the ``dot`` program (``render``); the arena timeline is SVG drawn
directly (``arena_svg``). ``refc show``, ``refc prove``, ``refc compile`` and
``refc report`` are their users.
"""

from refcompiler.pictures.graph import graph_dot
from refcompiler.pictures.program import program_dot
from refcompiler.pictures.render import PictureFormat, have_dot, render
from refcompiler.pictures.schedules import case_dot, counterexample_dot
from refcompiler.pictures.timeline import arena_svg

__all__ = ["graph_dot", "program_dot", "case_dot", "counterexample_dot", "arena_svg", "PictureFormat", "render", "have_dot"]
