"""Symbolic translation validation (DESIGN §7.4).

Modules: ``terms`` (hash-consed terms), ``kernels`` (the symbolic kernel table,
derived from ``specs``), ``interpreter`` (the IR interpreter's memory model on
terms), ``reference`` (the reference on terms), ``encode`` (terms to Z3),
``confirm`` (a model made concrete and confirmed by execution), ``validate``
(one compiled program), ``schedules`` (every legal order), ``defaults`` (the
validator's default bounds).

The names below load on first use (PEP 562), as ``refcompiler``'s do: importing
``refcompiler.symbolic.defaults`` for ``refc validate --help`` runs this file
first, and must not load the validator and Z3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from refcompiler.lazy import exports as _exports, names as _names

if TYPE_CHECKING:
    from refcompiler.symbolic.validate import SCOPE, Validation, small_enough, validate_compiled

__all__ = ["SCOPE", "Validation", "small_enough", "validate_compiled"]

# public name -> (module, attribute)
_LAZY = _names(("refcompiler.symbolic.validate", __all__))
__getattr__, __dir__ = _exports(__name__, _LAZY, globals())
