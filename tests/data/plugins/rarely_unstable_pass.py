"""A user's pass that compiles one program otherwise on its first call only (as
one wrong on one call in ten, when a campaign met that call): then it drops the
copies that save results into placeholders; on every later call it changes
nothing. Asked again eight times, it looks stable. Loaded as
``rarely_unstable_pass:drop_on_first_call`` with this directory on
``PYTHONPATH``; ``_calls`` is reset by the test that loads it."""

from __future__ import annotations

from refcompiler.ir import Opcode

_calls = [0]


def drop_on_first_call(program):
    _calls[0] += 1
    if _calls[0] == 1:
        return program.with_instrs([i for i in program.instrs if i.opcode is not Opcode.COPY])
    return program
