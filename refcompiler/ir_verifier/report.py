"""A violation found by the IR verifier, in the canonical text form, with the IR around it."""

from __future__ import annotations

from refcompiler.errors import InvariantViolation
from refcompiler.ir import Program
from refcompiler.ir_text import context_lines, format_instr

__all__ = ["violation"]


def violation(program: Program, inv: str, index: int, message: str, *names: str) -> InvariantViolation:
    """Invariant ``inv`` broken at instruction ``index``: the message names the
    instruction in its canonical text; the context shows its neighbours."""
    instr = program.instrs[index]
    text = f"instruction {index} `{' '.join(format_instr(instr).split())}`: {message}"
    return InvariantViolation(inv, text, names=names, context=context_lines(program, index))
