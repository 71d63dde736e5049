"""A user's pass that compiles one program otherwise from one call to the next
(as one reading a clock, a random number or a set's order would): every other
call drops the copies that save results into placeholders. Loaded as
``unstable_pass:drop_every_other`` with this directory on ``PYTHONPATH``;
``unchanged`` is a user's pass that changes nothing, to run before it."""

from __future__ import annotations

from refcompiler.ir import Opcode

_calls = [0]


def drop_every_other(program):
    _calls[0] += 1
    if _calls[0] % 2:
        return program.with_instrs([i for i in program.instrs if i.opcode is not Opcode.COPY])
    return program


def unchanged(program):
    return program
