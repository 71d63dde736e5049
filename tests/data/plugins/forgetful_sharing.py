"""A user's buffer-sharing pass for the campaign tests, with its fixed twin.

``forgetful`` is refc's ``share_buffers`` except that, when a kernel's result
takes over an input's buffer, it forgets to look at the *other operands of the
same instruction*: another input viewing that buffer in a role the in-place
list does not allow, or through a view of another shape, is overwritten while
it is still being read. ``fixed`` is refc's own pass. Not part of refc: loaded
as ``forgetful_sharing:forgetful`` with this directory on ``PYTHONPATH``.
"""

from __future__ import annotations

from refcompiler.ir import Opcode, OperandKind
from refcompiler.passes import share_buffers as refc_sharing

fixed = refc_sharing.share_buffers


def _share_result(state, index, k):
    """refc's ``_share_result`` without its look at the other operands on the buffer."""
    instr = state.instr(index)
    result = instr.operands[k].name
    if not refc_sharing._fresh_result(state, index, instr, result):
        return
    types = state.facts.types
    inputs = instr.operands_of(OperandKind.IN)
    for position in refc_sharing.allowed_inputs(instr, k):
        if position >= len(inputs):
            continue
        candidate = inputs[position].name
        if types.get(candidate) != types.get(result) or candidate == result:
            continue
        root = state.origin(candidate)
        if not refc_sharing.may_reuse(state.program, root):
            continue
        # the bug: no look at the instruction's other operands on this buffer
        if any(refc_sharing.read_later(state, index, n) for n in refc_sharing.aliases(state, candidate)):
            continue
        if state.last_write.get(root, -1) > index:
            continue
        state.share(result, candidate)
        return


def forgetful(program):
    state = refc_sharing.Sharing(program)
    for index, instr in enumerate(program.instrs):
        if instr.opcode is Opcode.KERNEL:
            for k in range(len(instr.operands_of(OperandKind.OUT))):
                _share_result(state, index, k)
    return state.result()
