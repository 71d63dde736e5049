"""Symbolic translation validation (DESIGN §7.4).

Modules: ``terms`` (hash-consed terms), ``kernels`` (the symbolic kernel table,
derived from ``specs``), ``interpreter`` (the IR interpreter's memory model on
terms), ``reference`` (the reference on terms), ``encode`` (terms to Z3),
``confirm`` (a model made concrete and confirmed by execution), ``validate``
(one compiled program), ``schedules`` (every legal order).
"""

from refcompiler.symbolic.validate import SCOPE, Validation, small_enough, validate_compiled

__all__ = ["SCOPE", "Validation", "small_enough", "validate_compiled"]
