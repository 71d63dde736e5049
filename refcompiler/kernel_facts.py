"""What the execution plan and the symbolic machine take from a kernel
instruction's op spec, operand kinds and attributes (``kernel_facts``), kept
per swap table: the same few facts are asked for every kernel instruction of
every program a campaign runs, concretely and on symbols."""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from refcompiler import memos
from refcompiler.ir import Instr, OperandKind, signature_problem
from refcompiler.spec import spec_of

__all__ = ["FACTS_KEPT", "KernelFacts", "kernel_facts"]

# (@out count, @in count, the attributes' defaults -- or, from ``kernel_facts``,
# the instruction's attributes over them, read-only: every program sharing the
# instruction shares them --, each result's in-place inputs, and -- from
# ``kernel_facts`` -- the attributes' repr, sorted by name: part of a symbolic
# step's key)
KernelFacts = tuple[int, int, Mapping[str, object], tuple[tuple[int, ...], ...], str]

# (id of the swap table, the opcode, the op, the operand kinds) -> (the table,
# facts); bounded (cleared when full). The table is a dict, so it is keyed by
# its id, checked on a hit (the entry holds it, so its id is not reused while
# it is kept); the enums are plain keys.
_FACTS: dict[tuple[object, ...], tuple[object, "KernelFacts | str"]] = {}
FACTS_KEPT = 1024
# id of an instruction -> (it, the swap table, its facts): most kernel
# instructions of a campaign's programs are objects other programs share (the
# passes keep the instructions they do not change); bounded (cleared when full).
# By identity: an instruction is a dataclass, hashed field by field in Python.
_BY_INSTR: dict[int, tuple[Instr, object, "KernelFacts | str"]] = memos.kept({})


def kernel_facts(instr: Instr, swaps: object) -> KernelFacts | str:
    """``_facts(instr)`` under the swap table ``swaps`` (``variants.active()``,
    installed now), kept by that table, the opcode, the op and the operand
    kinds (all it is a function of), with the defaults replaced by the
    instruction's attributes (its own over the defaults: a hand-written kernel
    may omit them), kept by the instruction object itself."""
    mine = _BY_INSTR.get(id(instr))
    if mine is not None and mine[0] is instr and mine[1] is swaps:
        return mine[2]
    facts: KernelFacts | str
    by_kinds = _facts_by_kinds(instr, swaps)
    if isinstance(by_kinds, str):
        facts = by_kinds
    else:
        n_out, n_in, defaults, inplace, _ = by_kinds
        attrs = defaults | dict(instr.attrs)
        facts = n_out, n_in, MappingProxyType(attrs), inplace, repr(sorted(attrs.items()))
    if len(_BY_INSTR) >= FACTS_KEPT:
        _BY_INSTR.clear()
    _BY_INSTR[id(instr)] = (instr, swaps, facts)
    return facts


def _facts_by_kinds(instr: Instr, swaps: object) -> KernelFacts | str:
    key = (id(swaps), instr.opcode, instr.op, *[o.kind for o in instr.operands])
    found = _FACTS.get(key)
    if found is not None and found[0] is swaps:
        return found[1]
    facts = _facts(instr)
    if len(_FACTS) >= FACTS_KEPT:
        _FACTS.clear()
    _FACTS[key] = (swaps, facts)
    return facts


def _facts(instr: Instr) -> KernelFacts | str:
    """From the op's spec (``spec_of``, a swap point) and the operand kinds:
    the IR-1 signature problem (``signature_problem``), or the numbers of
    ``@out`` and ``@in`` operands, the attributes' defaults and each result's
    in-place inputs."""
    problem = signature_problem(instr)
    if problem is not None:
        return problem
    spec = spec_of(instr.op)  # type: ignore[arg-type]  # checked: a kernel has an op
    kinds = [o.kind for o in instr.operands]
    n_out = kinds.count(OperandKind.OUT)
    defaults = {a.name: a.default for a in spec.attrs}
    return n_out, kinds.count(OperandKind.IN), defaults, tuple(spec.inplace_inputs(k) for k in range(n_out)), ""
