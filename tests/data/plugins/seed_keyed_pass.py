"""A user's pass that reads the seeds of the program's buffers (their initial
values, ``Buffer.init``) and is wrong for some of them only: when the seeds add
up to a multiple of three it drops the copies that save results into
placeholders. A ``--graph`` campaign that draws fresh seeds for the graph must
give it programs with those seeds. Loaded as ``seed_keyed_pass:on_some_seeds``
with this directory on ``PYTHONPATH``."""

from __future__ import annotations

from refcompiler.ir import Opcode


def on_some_seeds(program):
    seeds = [b.init.seed for b in program.buffers if b.init is not None and b.init.seed is not None]
    if sum(seeds) % 3 == 0:
        return program.with_instrs([i for i in program.instrs if i.opcode is not Opcode.COPY])
    return program
