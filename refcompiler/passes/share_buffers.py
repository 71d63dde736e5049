"""``share_buffers``: a kernel's result reuses the buffer of one of its inputs (DESIGN §5).

For each kernel, in program order, and each of its results ``@out`` in result
order, the result takes over the buffer of an input when all of these hold:

- the spec's in-place list for *that* result allows the input's position
  (``allowed_inputs``);
- the input's type (shape and dtype) is the result's type;
- the input's origin is an activation, never a constant, placeholder or owned
  buffer (``may_reuse``);
- no later instruction reads the input or anything that aliases it, views
  included (``read_later`` over ``aliases``), and none writes it;
- every other operand of the instruction on that buffer is an input the same
  in-place list allows, of the result's type: never two results on one
  buffer, never a state operand, never an input in a role the list does not
  allow, never a broadcast input seen through a view of another shape.

Sharing renames the result activation to the input's name everywhere, drops
the result's ``alloc``/``dealloc`` pair, and keeps the shared buffer's
``dealloc`` after the last use of either name. The result must itself be an
activation with its own ``alloc`` that this instruction is the first to use
(so a result that already shares a buffer is left alone).
"""

from __future__ import annotations

from specs import TensorType

from refcompiler import ir_analysis
from refcompiler.ir import Instr, Opcode, OperandKind, Program
from refcompiler.spec import spec_of
from refcompiler.variants import swappable

__all__ = ["share_buffers", "allowed_inputs", "may_reuse", "read_later", "aliases"]


@swappable
def allowed_inputs(instr: Instr, k: int) -> tuple[int, ...]:
    """Input positions whose buffer result ``k`` of the kernel may overwrite: the
    spec's in-place list for that result. (Types are checked by the caller.)"""
    return spec_of(instr.op).inplace_inputs(k)  # type: ignore[arg-type]


@swappable
def may_reuse(program: Program, buffer_name: str) -> bool:
    """Whether a result may take over ``buffer_name`` (an origin): activations only."""
    return buffer_name not in program.buffer_by_name and buffer_name in ir_analysis.activations(program)


@swappable
def read_later(program: Program, index: int, name: str) -> bool:
    """Whether an instruction after ``index`` reads ``name`` itself (callers ask for each alias)."""
    return any(name in ir_analysis.read_names(i) for i in program.instrs[index + 1:])


@swappable
def aliases(program: Program, name: str) -> frozenset[str]:
    """Every name that shares memory with ``name``: ``name`` and every view with its origin."""
    return ir_analysis.aliases(program, name)


def share_buffers(program: Program) -> Program:
    """Share buffers between kernel results and their inputs where it is legal (see module doc)."""
    count = sum(1 for i in program.instrs if i.opcode is Opcode.KERNEL)
    for ordinal in range(count):
        # sharing drops an alloc, so find the kernel again by its ordinal
        index = [i for i, instr in enumerate(program.instrs) if instr.opcode is Opcode.KERNEL][ordinal]
        n_out = len(program.instrs[index].operands_of(OperandKind.OUT))
        for k in range(n_out):
            shared = _share_result(program, index, k)
            if shared is not None:
                program, index = shared
    return program


def _share_result(program: Program, index: int, k: int) -> tuple[Program, int] | None:
    """Share result ``k`` of the kernel at ``index`` with the first legal input, if any."""
    instr = program.instrs[index]
    result = instr.operands[k].name
    if not _fresh_result(program, index, result):
        return None
    types = ir_analysis.name_types(program)
    inputs = instr.operands_of(OperandKind.IN)
    allowed = allowed_inputs(instr, k)
    for position in allowed:
        if position >= len(inputs):
            continue
        candidate = inputs[position].name
        if types.get(candidate) != types.get(result) or candidate == result:
            continue
        root = ir_analysis.origin(program, candidate)
        if not may_reuse(program, root):
            continue
        if not _only_allowed_roles(program, instr, root, allowed, types.get(result)):
            continue
        if any(read_later(program, index, name) for name in aliases(program, candidate)):
            continue
        if _written_later(program, index, candidate):
            continue
        return _rename_result(program, index, result, candidate)
    return None


def _fresh_result(program: Program, index: int, result: str) -> bool:
    """``result`` is an activation this instruction defines: it has an ``alloc``, no
    earlier instruction uses it, and this one names it once. (A result that
    already shares a buffer holds values written earlier: renaming it again
    would move those writes too.)"""
    if ir_analysis.alloc_index(program, result) is None:
        return False
    if ir_analysis.first_use(program, result) != index:
        return False
    return [o.name for o in program.instrs[index].operands].count(result) == 1


def _only_allowed_roles(
    program: Program, instr: Instr, root: str, allowed: tuple[int, ...], result_type: TensorType | None
) -> bool:
    """Every operand of ``instr`` on buffer ``root`` is an input at an allowed
    position with the result's type (IR-6: ``add(%a, view %a as [1, 4])`` may
    not write ``%a``'s buffer as a ``[1, 4]`` result, since ``%a`` is ``[4]``)."""
    types = ir_analysis.name_types(program)
    inputs_seen = 0
    for operand in instr.operands:
        is_input = operand.kind is OperandKind.IN
        position = inputs_seen
        inputs_seen += is_input
        if ir_analysis.origin(program, operand.name) != root:
            continue
        if not is_input or position not in allowed or types.get(operand.name) != result_type:
            return False
    return True


def _written_later(program: Program, index: int, name: str) -> bool:
    # A later write would clobber the result that now lives in this buffer.
    return any(i > index for i in ir_analysis.writers(program, name))


def _rename_result(program: Program, index: int, result: str, candidate: str) -> tuple[Program, int]:
    """Rename ``result`` to ``candidate``; drop the result's alloc/dealloc; keep the
    shared buffer's dealloc after the later of the two. Returns the program and
    the kernel's new index."""
    root = ir_analysis.origin(program, candidate)
    result_alloc = ir_analysis.alloc_index(program, result)
    result_dealloc = ir_analysis.dealloc_index(program, result)
    root_dealloc = ir_analysis.dealloc_index(program, root)
    move_root_dealloc = root_dealloc is not None and result_dealloc is not None and root_dealloc < result_dealloc
    out: list[Instr] = []
    for i, instr in enumerate(program.instrs):
        if i == result_alloc:
            continue
        if i == result_dealloc:
            if move_root_dealloc:
                out.append(program.instrs[root_dealloc])  # type: ignore[index]
            continue
        if i == root_dealloc and move_root_dealloc:
            continue
        out.append(ir_analysis.rename(instr, result, candidate))
    new_index = index - (1 if result_alloc is not None and result_alloc < index else 0)
    return program.with_instrs(out), new_index
