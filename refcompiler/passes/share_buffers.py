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

from typing import Callable

from specs import TensorType
from specs.cached import cached_property

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
    return buffer_name not in program.buffer_by_name and ir_analysis.alloc_index(program, buffer_name) is not None


@swappable
def read_later(state: "Sharing", index: int, name: str) -> bool:
    """Whether an instruction after ``index`` reads ``name`` itself (callers ask for each alias)."""
    return state.last_read.get(name, -1) > index


@swappable
def aliases(state: "Sharing", name: str) -> frozenset[str]:
    """Every name that shares memory with ``name``: ``name`` and every view with its origin."""
    root = state.origin(name)
    return frozenset({name, root} | state.members.get(root, set()))


def share_buffers(program: Program) -> Program:
    """Share buffers between kernel results and their inputs where it is legal (see module doc).

    Kernels are visited in order, each against the program as the earlier
    sharings left it; that program is kept as a ``Sharing`` (renames, origins
    and per-buffer facts updated at each sharing) and written out once."""
    state = Sharing(program)
    kernel, out = Opcode.KERNEL, OperandKind.OUT  # locals: an enum class's attribute is slow (3.11)
    for index, instr in enumerate(program.instrs):
        if instr.opcode is not kernel:
            continue
        for k in range(len(instr.operands_of(out))):
            _share_result(state, index, k)
    return state.result()


def _share_result(state: Sharing, index: int, k: int) -> None:
    """Share result ``k`` of the kernel at ``index`` with the first legal input, if any."""
    instr = state.instr(index)
    result = instr.operands[k].name
    if not _fresh_result(state, index, instr, result):
        return
    types = state.facts.types
    inputs = instr.operands_of(OperandKind.IN)
    allowed = allowed_inputs(instr, k)
    for position in allowed:
        if position >= len(inputs):
            continue
        candidate = inputs[position].name
        if types.get(candidate) != types.get(result) or candidate == result:
            continue
        root = state.origin(candidate)
        if not may_reuse(state.program, root):
            continue
        if not _only_allowed_roles(state, instr, root, allowed, types.get(result)):
            continue
        if any(read_later(state, index, name) for name in aliases(state, candidate)):
            continue
        if state.last_write.get(root, -1) > index:
            continue  # a later write would clobber the result that now lives in this buffer
        state.share(result, candidate)
        return


def _fresh_result(state: Sharing, index: int, instr: Instr, result: str) -> bool:
    """``result`` is an activation this instruction defines: it has an ``alloc``, no
    earlier instruction uses it, and this one names it once. (A result that
    already shares a buffer holds values written earlier: renaming it again
    would move those writes too.)"""
    if result not in state.facts.allocs or result in state.renamed:
        return False
    if state.first_use.get(state.origin(result)) != index:
        return False
    return [o.name for o in instr.operands].count(result) == 1


def _only_allowed_roles(
    state: Sharing, instr: Instr, root: str, allowed: tuple[int, ...], result_type: TensorType | None
) -> bool:
    """Every operand of ``instr`` on buffer ``root`` is an input at an allowed
    position with the result's type (IR-6: ``add(%a, view %a as [1, 4])`` may
    not write ``%a``'s buffer as a ``[1, 4]`` result, since ``%a`` is ``[4]``)."""
    types = state.facts.types
    inputs_seen = 0
    for operand in instr.operands:
        is_input = operand.kind is OperandKind.IN
        position = inputs_seen
        inputs_seen += is_input
        if state.origin(operand.name) != root:
            continue
        if not is_input or position not in allowed or types.get(operand.name) != result_type:
            return False
    return True


class Sharing:
    """The program as the sharings so far left it, without rewriting it each time.

    Names are current names (after renaming); indices are those of
    ``program``, the program the pass started from (a sharing only drops an
    ``alloc`` and moves a ``dealloc``, so the order of everything else stays).
    Kept per buffer (by current origin): the first use and the last write of
    any alias; per name: the last data instruction reading it by that name.
    """

    def __init__(self, program: Program):
        self.program = program
        self.facts = facts = ir_analysis.analyze(program)
        self.names: dict[str, str] = {}  # shared result -> the input whose buffer it took
        self.renamed = self.names.keys()
        self.merged: dict[str, str] = {}  # origin of a shared result -> origin it joined
        self.first_use = {root: found[0] for root, found in facts.uses.items()}
        self.dealloc_at = dict(facts.deallocs)
        self.slots: dict[int, Instr | None] = {}  # index -> what it holds now (None: dropped)

    # Made on first use, from the analysis (which does not change): most kernels
    # are turned down before anything asks for these.
    @cached_property
    def members(self) -> dict[str, set[str]]:
        return {root: set(views) for root, views in self.facts.members.items()}

    @cached_property
    def last_write(self) -> dict[str, int]:
        return {root: found[-1] for root, found in self.facts.writes.items()}

    @cached_property
    def last_read(self) -> dict[str, int]:
        return {name: found[-1] for name, found in self.facts.direct_reads.items()}

    def origin(self, name: str) -> str:
        root = self.facts.origin(name)
        while root in self.merged:
            root = self.merged[root]
        return root

    def instr(self, index: int) -> Instr:
        return self.program.instrs[index].renamed(self.names)

    def share(self, result: str, candidate: str) -> None:
        """Rename ``result`` to ``candidate``; drop the result's alloc/dealloc; keep the
        shared buffer's dealloc after the later of the two."""
        old, root = self.origin(result), self.origin(candidate)
        self.names[result] = candidate
        self._move_dealloc(result, root)
        self.slots[self.facts.allocs[result]] = None
        _keep(self.last_read, candidate, result, max)
        if old == root:
            return
        self.merged[old] = root
        small, large = self.members.pop(old, set()), self.members.get(root, set())
        if len(small) > len(large):
            small, large = large, small
        large |= small  # the smaller set moves: merging stays linear overall
        self.members[root] = large
        _keep(self.first_use, root, old, min)
        _keep(self.last_write, root, old, max)

    def _move_dealloc(self, result: str, root: str) -> None:
        result_dealloc = self.dealloc_at.pop(result, None)
        if result_dealloc is None:
            return
        self.slots[result_dealloc] = None
        root_dealloc = self.dealloc_at.get(root)
        if root_dealloc is not None and root_dealloc < result_dealloc:
            self.slots[result_dealloc] = self.slots.get(root_dealloc) or self.program.instrs[root_dealloc]
            self.slots[root_dealloc] = None
            self.dealloc_at[root] = result_dealloc

    def result(self) -> Program:
        if not self.names:
            return self.program
        out: list[Instr] = []
        for i, instr in enumerate(self.program.instrs):
            now = self.slots.get(i, instr)
            if now is not None:
                out.append(now.renamed(self.names))
        return self.program.with_instrs(out)


def _keep(table: dict[str, int], into: str, gone: str, pick: Callable[[int, int], int]) -> None:
    """``table[into]`` becomes ``pick`` of both entries; ``gone``'s is dropped."""
    value = table.pop(gone, None)
    if value is not None:
        table[into] = value if into not in table else pick(table[into], value)
