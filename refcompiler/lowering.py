"""Lowering a scheduled graph to the low-level IR (DESIGN §5).

In schedule order, each node becomes:

- a data node: an ``alloc`` of each result (an activation named ``%node``, or
  ``%node:k`` for result ``k`` of a node with several), then one ``kernel``
  named after the node: results ``@out``, inputs ``@in``, state ``@inout``
  on the owned module buffers (``lower_state_operands``), attributes with the
  spec's defaults filled in;
- a ``reshape``: a ``view`` named ``%node`` aliasing its input (a module
  buffer, an activation or another view), no ``alloc``;
- a ``save``: a ``copy`` named after the node, ``@out`` the placeholder's
  buffer, ``@in`` the saved value; nothing at all when the saved value is the
  placeholder itself, directly or through views (it would change nothing, and
  a copy may not read the buffer it writes).

Every activation is ``dealloc``-ed right after the last instruction that uses
it, directly or through a view (the view instruction itself counts); one that
nothing reads is deallocated right after the kernel that defines it.
Deallocs after one instruction come in the order of their allocs. Module
buffers (one per storage, kind from the storage kind, owner and init carried)
come in storage order. The program records the schedule and the graph's saves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from specs import OpKind, TensorType

from refcompiler.effects import is_self_save
from refcompiler.errors import InvariantViolation
from refcompiler.graph import Graph, Node, Ref, StorageKind
from refcompiler.ir import Buffer, BufferKind, Instr, Opcode, Operand, OperandKind, Program, Save
from refcompiler.ir_analysis import follow_views
from refcompiler.variants import replaced, swappable
from refcompiler.verifier import Types, infer_types

__all__ = ["lower", "Lowering", "lower_state_operands", "StateLowering", "value_name", "BUFFER_KIND"]

BUFFER_KIND: dict[StorageKind, BufferKind] = {
    StorageKind.CONSTANT: BufferKind.CONSTANT,
    StorageKind.PLACEHOLDER: BufferKind.PLACEHOLDER,
    StorageKind.OWNED: BufferKind.OWNED,
}


@dataclass(frozen=True)
class StateLowering:
    """How a node's state reaches its kernel: the ``operands`` the kernel takes
    for its state (``@inout``, in state order), instructions to place ``before``
    the kernel and ``after`` it. Activations that ``before`` allocates are
    deallocated by lowering after their last use, like every other."""

    operands: tuple[Operand, ...]
    before: tuple[Instr, ...] = ()
    after: tuple[Instr, ...] = ()


@swappable
def lower_state_operands(node: Node, buffers: Mapping[str, Buffer], fresh: Callable[[str], str]) -> StateLowering:
    """The owner updates its owned buffers in place: each state operand is the
    module buffer itself, ``@inout``. (``buffers``: module buffers by name;
    ``fresh(hint)``: an unused IR name, for a lowering that needs temporaries.)"""
    return StateLowering(operands=tuple(Operand(OperandKind.INOUT, name) for name in node.state))


def value_name(node: Node, index: int) -> str:
    """The IR name of result ``index`` of ``node``: ``%node``, or ``%node:k`` when it has several."""
    return f"%{node.name}" if len(node.spec.results) == 1 else f"%{node.name}:{index}"


def lower(graph: Graph, schedule: Sequence[str], types: Types | None = None) -> Program:
    """The program for ``graph`` (valid, its saves not in a cycle) run in the
    order ``schedule`` (a legal schedule of every node; not checked here).
    ``types``: the result types of ``graph``'s nodes when the caller has them
    (``infer_types`` otherwise)."""
    return Lowering(graph, types).lower(schedule)


class Lowering:
    """Lowering of one graph, for any number of orders: what does not depend on
    the order (the module buffers, the saves, and each node's instructions) is
    made once, and ``lower(schedule)`` lays the nodes' instructions out in
    ``schedule`` order and places the deallocs.

    A node's instructions are a function of the graph, its types and the swap
    points installed, so a ``Lowering`` must be used under the swap points it
    was made under (its maker keys it by them). They are kept per node unless
    ``lower_state_operands`` is swapped: a replacement may take fresh names,
    which depend on the nodes lowered before (the order), so then every
    ``lower`` makes every node's instructions anew, in order."""

    def __init__(self, graph: Graph, types: Types | None = None):
        self.graph = graph
        self.types = infer_types(graph) if types is None else types
        self.buffers = tuple(
            Buffer(name=s.name, kind=BUFFER_KIND[s.kind], type=TensorType(s.shape, s.dtype), owner=s.owner, init=s.init)
            for s in graph.storage
        )
        self.buffer_by_name = {b.name: b for b in self.buffers}
        self.saves = tuple(_saves(graph))
        self.placeholder_writers = Program("", (), (), saves=self.saves).placeholder_writers  # a function of the saves alone
        self.reuse = not replaced(lower_state_operands)
        self.blocks: dict[str, tuple[Instr, ...]] = {}  # node -> its instructions (when ``reuse``)
        self.deallocs: dict[str, Instr] = {}  # activation -> its dealloc, the same object in every order (when ``reuse``)

    def operand(self, ref: Ref) -> str:
        if self.graph.is_storage(ref):
            return ref.name
        return value_name(self.graph.node_by_name[ref.name], ref.result)

    def lower(self, schedule: Sequence[str]) -> Program:
        """The program for the order ``schedule`` (see ``lower``)."""
        graph = self.graph
        fresh = _no_fresh_names if self.reuse else self._namer()
        body: list[Instr] = []
        for name in schedule:
            block = self.blocks.get(name)
            if block is None:
                node = graph.node_by_name.get(name)
                if node is None:
                    raise InvariantViolation("SCH-1", f"the schedule names '{name}', which is no node of the graph", names=(name,))
                # a save of a placeholder's entry value into itself changes nothing: no instructions
                block = () if is_self_save(graph, node) else tuple(self._node(node, fresh))
                if self.reuse:
                    self.blocks[name] = block
            body.extend(block)
        program = Program(
            name=graph.name,
            buffers=self.buffers,
            instrs=tuple(_with_deallocs(body, self.deallocs if self.reuse else {})),
            schedule=tuple(schedule),
            saves=self.saves,
        )
        program.__dict__["buffer_by_name"] = self.buffer_by_name  # = the cached properties (read only)
        program.__dict__["placeholder_writers"] = self.placeholder_writers
        return program

    def _node(self, node: Node, fresh: Callable[[str], str]) -> list[Instr]:
        return _lower_node(node, self.types, self.operand, self.buffer_by_name, fresh)

    def _namer(self) -> "_Namer":
        graph = self.graph
        return _Namer(set(self.buffer_by_name) | {value_name(n, k) for n in graph.nodes for k in range(len(n.spec.results))})


def _no_fresh_names(hint: str) -> str:
    """``fresh`` for instructions kept across orders: the built-in
    ``lower_state_operands`` takes no fresh names, and one taken here would
    depend on the order the nodes were first lowered in."""
    raise AssertionError(f"lowering asked for a fresh name ({hint}) with node instructions kept across orders")


def _lower_node(
    node: Node,
    types: Mapping[tuple[str, int], TensorType],
    operand: Callable[[Ref], str],
    buffers: Mapping[str, Buffer],
    fresh: Callable[[str], str],
) -> list[Instr]:
    spec = node.spec
    inputs = tuple(Operand(OperandKind.IN, operand(ref)) for ref in node.inputs)
    if spec.view:
        return [Instr(Opcode.VIEW, value_name(node, 0), inputs, type=types[(node.name, 0)])]
    if node.op is OpKind.SAVE:
        return [Instr(Opcode.COPY, node.name, (Operand(OperandKind.OUT, node.target), *inputs))]
    out: list[Instr] = []
    results = []
    for k in range(len(spec.results)):
        activation = value_name(node, k)
        out.append(Instr(Opcode.ALLOC, activation, (Operand(OperandKind.OUT, activation),), type=types[(node.name, k)]))
        results.append(Operand(OperandKind.OUT, activation))
    state = lower_state_operands(node, buffers, fresh)
    out.extend(state.before)
    out.append(
        Instr(
            Opcode.KERNEL,
            node.name,
            (*results, *inputs, *state.operands),
            op=node.op,
            attrs=tuple(node.attr_dict().items()),
        )
    )
    out.extend(state.after)
    return out


def _with_deallocs(body: list[Instr], made: dict[str, Instr]) -> list[Instr]:
    """``body`` with a ``dealloc`` of each activation right after its last use.
    ``made``: the deallocs made so far, by activation (one is a function of the
    name alone), to take from and add to."""
    sources: dict[str, str] = {}  # view -> its source
    allocated: list[str] = []
    last_use: dict[str, int] = {}
    alloc, view = Opcode.ALLOC, Opcode.VIEW  # locals: an enum class's attribute is slow (3.11)
    for i, instr in enumerate(body):
        if instr.opcode is alloc:
            allocated.append(instr.name)
            last_use[instr.name] = i
            continue
        if instr.opcode is view and instr.operands:
            sources[instr.name] = instr.operands[0].name
        for o in instr.operands:
            root = follow_views(sources, o.name) if o.name in sources else o.name
            if root in last_use:
                last_use[root] = i
    ends: dict[int, list[str]] = {}
    for activation in allocated:
        ends.setdefault(last_use[activation], []).append(activation)
    out: list[Instr] = []
    for i, instr in enumerate(body):
        out.append(instr)
        for a in ends.get(i, ()):
            dealloc = made.get(a)
            if dealloc is None:
                dealloc = made[a] = Instr(Opcode.DEALLOC, a, (Operand(OperandKind.IN, a),))
            out.append(dealloc)
    return out


def _saves(graph: Graph) -> list[Save]:
    out = []
    for node in graph.saves():
        ref = node.inputs[0]
        producer: str | None = None
        while not graph.is_storage(ref):
            source = graph.node_by_name[ref.name]
            if not source.spec.view:
                producer = source.name
                break
            ref = source.inputs[0]
        out.append(Save(node=node.name, target=node.target, producer=producer))
    return out


class _Namer:
    """Hands out IR names not yet taken: ``hint``, else ``hint.2``, ``hint.3``..."""

    def __init__(self, taken: set[str]):
        self.taken = set(taken)

    def __call__(self, hint: str) -> str:
        name, k = hint, 1
        while name in self.taken:
            k += 1
            name = f"{hint}.{k}"
        self.taken.add(name)
        return name
