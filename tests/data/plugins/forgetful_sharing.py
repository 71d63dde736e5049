"""A user's buffer-sharing pass for the campaign tests, with its fixed twin.

``forgetful`` is refc's ``share_buffers`` except that, when a kernel's result
takes over an input's buffer, it forgets to look at the *other operands of the
same instruction*: another input viewing that buffer in a role the in-place
list does not allow, or through a view of another shape, is overwritten while
it is still being read. ``fixed`` is refc's own pass. Not part of refc: loaded
as ``forgetful_sharing:forgetful`` with this directory on ``PYTHONPATH``.
"""

from __future__ import annotations

from refcompiler import ir_analysis
from refcompiler.ir import Opcode, OperandKind
from refcompiler.passes import share_buffers as refc_sharing

fixed = refc_sharing.share_buffers


def _share_result(program, index, k):
    instr = program.instrs[index]
    result = instr.operands[k].name
    if not refc_sharing._fresh_result(program, index, result):
        return None
    types = ir_analysis.name_types(program)
    inputs = instr.operands_of(OperandKind.IN)
    for position in refc_sharing.allowed_inputs(instr, k):
        if position >= len(inputs):
            continue
        candidate = inputs[position].name
        if types.get(candidate) != types.get(result) or candidate == result:
            continue
        if not refc_sharing.may_reuse(program, ir_analysis.origin(program, candidate)):
            continue
        # the bug: no look at the instruction's other operands on this buffer
        if any(refc_sharing.read_later(program, index, n) for n in refc_sharing.aliases(program, candidate)):
            continue
        if refc_sharing._written_later(program, index, candidate):
            continue
        return refc_sharing._rename_result(program, index, result, candidate)
    return None


def forgetful(program):
    count = sum(1 for i in program.instrs if i.opcode is Opcode.KERNEL)
    for ordinal in range(count):
        index = [i for i, instr in enumerate(program.instrs) if instr.opcode is Opcode.KERNEL][ordinal]
        for k in range(len(program.instrs[index].operands_of(OperandKind.OUT))):
            shared = _share_result(program, index, k)
            if shared is not None:
                program, index = shared
    return program
