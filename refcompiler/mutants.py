"""The mutant catalog (DESIGN §9): named, deliberately wrong variants of the compiler.

Each mutant replaces one swap point (``refcompiler.variants``) with a wrong
variant modelled on a real bug class; ``activate(name)`` installs it for a
block. Nothing here is active by default, and the correct code names no
mutant. The wrong variants live in this file only, next to their entry.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

from refcompiler.errors import UsageError
from refcompiler.limits import shown
from refcompiler.variants import installed

__all__ = ["Mutant", "CATALOG", "activate", "get"]


@dataclass(frozen=True)
class Mutant:
    name: str
    component: str
    bug_class: str
    description: str
    # swap point (a @swappable function) -> the wrong replacement; a function so
    # that the modules it touches are imported only when the mutant is used
    replacements: Callable[[], dict[Any, Callable[..., Any]]]


def _sched_drop_save_war() -> dict[Any, Callable[..., Any]]:
    from refcompiler import deps

    return {deps.memory_edges: lambda graph: []}


def _verify_allow_foreign_state() -> dict[Any, Callable[..., Any]]:
    from specs import OpKind

    from refcompiler import ownership

    def check_own2(graph: Any) -> Iterator[Any]:
        # only the save-into-owned rule is left: data reads and foreign state pass
        for v in ownership.check_own2.original(graph):
            node, storage = graph.node_by_name[v.names[0]], v.names[1]
            if node.op is OpKind.SAVE and node.target == storage:
                yield v

    return {ownership.check_own2: check_own2}


def _verify_allow_two_saves() -> dict[Any, Callable[..., Any]]:
    from refcompiler import ownership

    return {ownership.check_one_save_per_placeholder: lambda graph: iter(())}


def _share_ignore_later_reads() -> dict[Any, Callable[..., Any]]:
    from refcompiler.passes import share_buffers

    return {share_buffers.read_later: lambda state, index, name: False}


def _share_ignore_views() -> dict[Any, Callable[..., Any]]:
    from refcompiler.passes import share_buffers

    return {share_buffers.aliases: lambda state, name: frozenset({name})}


def _share_into_placeholder() -> dict[Any, Callable[..., Any]]:
    from refcompiler.ir import BufferKind
    from refcompiler.passes import share_buffers

    def may_reuse(program: Any, name: str) -> bool:
        buffer = program.buffer_by_name.get(name)
        is_placeholder = buffer is not None and buffer.kind is BufferKind.PLACEHOLDER
        return is_placeholder or share_buffers.may_reuse.original(program, name)

    return {share_buffers.may_reuse: may_reuse}


def _share_any_input() -> dict[Any, Callable[..., Any]]:
    from refcompiler.ir import OperandKind
    from refcompiler.passes import share_buffers

    return {share_buffers.allowed_inputs: lambda instr, k: tuple(range(len(instr.operands_of(OperandKind.IN))))}


def _hoist_dealloc_early() -> dict[Any, Callable[..., Any]]:
    from refcompiler import ir_analysis
    from refcompiler.passes import hoist_dealloc

    def last_use(program: Any, name: str) -> int:
        found = hoist_dealloc.last_use.original(program, name)
        alloc = ir_analysis.alloc_index(program, name)
        return found - 1 if alloc is not None and found > alloc else found

    return {hoist_dealloc.last_use: last_use}


def _alloc_early_free() -> dict[Any, Callable[..., Any]]:
    from refcompiler import allocator

    def live_interval(program: Any, name: str) -> tuple[int, int]:
        start, end = allocator.live_interval.original(program, name)
        return start, max(start, end - 1)

    return {allocator.live_interval: live_interval}


def _copy_elim_ignore_readers() -> dict[Any, Callable[..., Any]]:
    from refcompiler.passes import eliminate_copies

    return {eliminate_copies.placeholder_read_after: lambda program, index, placeholder: False}


def _dse_drop_state_write() -> dict[Any, Callable[..., Any]]:
    from refcompiler.ir import BufferKind
    from refcompiler.passes import dead_store_elimination as dse

    def is_observable(program: Any, name: str) -> bool:
        buffer = program.buffer_by_name.get(name)
        return dse.is_observable.original(program, name) and not (buffer is not None and buffer.kind is BufferKind.OWNED)

    return {dse.is_observable: is_observable}


def _inplace_stencil() -> dict[Any, Callable[..., Any]]:
    from specs import OpKind

    from refcompiler import spec

    def spec_of(kind: Any) -> Any:
        entry = spec.spec_of.original(kind)
        return replace(entry, inplace=(("x",),)) if kind is OpKind.ROLL else entry

    return {spec.spec_of: spec_of}


def _dce_drop_stateful() -> dict[Any, Callable[..., Any]]:
    from specs import OpKind

    from refcompiler.graph_passes import dce

    return {dce.has_effect: lambda node: node.op is OpKind.SAVE}


def _lower_state_no_writeback() -> dict[Any, Callable[..., Any]]:
    from refcompiler import lowering
    from refcompiler.ir import Instr, Opcode, Operand, OperandKind

    def lower_state_operands(node: Any, buffers: Any, fresh: Callable[[str], str]) -> Any:
        operands, before = [], []
        for name in node.state:
            buffer = buffers[name]
            temp = fresh(f"%{node.name}.{name}")
            before.append(Instr(Opcode.ALLOC, temp, (Operand(OperandKind.OUT, temp),), type=buffer.type))
            before.append(Instr(Opcode.COPY, node.name, (Operand(OperandKind.OUT, temp), Operand(OperandKind.IN, name))))
            operands.append(Operand(OperandKind.INOUT, temp))
        # the owner updates the copy; nothing writes it back to the owned buffer
        return lowering.StateLowering(operands=tuple(operands), before=tuple(before))

    return {lowering.lower_state_operands: lower_state_operands}


_TABLE = (
    Mutant("sched-drop-save-war", "dependencies", "missing write-after-read memory edge",
           "the dependency model has no reader -> save edges, so a save may run before a read of its placeholder",
           _sched_drop_save_war),
    Mutant("verify-allow-foreign-state", "verifier", "ownership check too weak",
           "the verifier accepts a non-owner reading owned state (OWN-2)", _verify_allow_foreign_state),
    Mutant("verify-allow-two-saves", "verifier", "ownership check too weak",
           "the verifier accepts two saves into one placeholder (OWN-4)", _verify_allow_two_saves),
    Mutant("share-ignore-later-reads", "share_buffers", "in-place reuse of a live value",
           "buffer sharing ignores readers of the input that come later", _share_ignore_later_reads),
    Mutant("share-ignore-views", "share_buffers", "aliasing through views missed",
           "buffer sharing ignores reads that go through a view", _share_ignore_views),
    Mutant("share-into-placeholder", "share_buffers", "in-place write to module storage",
           "buffer sharing lets a result reuse a placeholder's buffer", _share_into_placeholder),
    Mutant("share-any-input", "share_buffers", "per-result in-place lists ignored",
           "buffer sharing ignores the per-result in-place lists (any same-shaped input)", _share_any_input),
    Mutant("hoist-dealloc-early", "hoist_dealloc", "use after free",
           "a dealloc is placed before the last use of its buffer", _hoist_dealloc_early),
    Mutant("alloc-early-free", "allocator", "live range off by one",
           "the allocator frees a buffer one instruction before its last use", _alloc_early_free),
    Mutant("copy-elim-ignore-readers", "eliminate_copies", "missing write-after-read check",
           "save-copy elimination ignores readers of the placeholder that come later", _copy_elim_ignore_readers),
    Mutant("dse-drop-state-write", "dead_store_elimination", "side effect treated as dead",
           "dead-store elimination treats a write to owned state as dead", _dse_drop_state_write),
    Mutant("inplace-stencil", "spec", "wrong in-place declaration",
           "the spec declares roll in place", _inplace_stencil),
    Mutant("dce-drop-stateful", "dce", "side effect treated as dead",
           "graph dead-code elimination drops an owner node whose results are unused", _dce_drop_stateful),
    Mutant("lower-state-no-writeback", "lowering", "lost state update",
           "lowering updates a copy of owned state and never writes it back", _lower_state_no_writeback),
)

CATALOG: dict[str, Mutant] = {m.name: m for m in _TABLE}


def get(name: str) -> Mutant:
    try:
        return CATALOG[name]
    except KeyError:
        known = ", ".join(CATALOG)
        raise UsageError(f"unknown mutant {shown(name)} (known: {known})") from None


# the correct compiler: nothing to install (a context manager that may be entered any number of times)
_CORRECT: contextlib.AbstractContextManager[None] = contextlib.nullcontext()


def activate(name: str | None) -> contextlib.AbstractContextManager[None]:
    """A context manager running its block with mutant ``name`` installed
    (``None``: the correct compiler). The oracle enters one per stage and
    schedule, so the correct compiler's costs no generator. ``UsageError`` for
    an unknown name."""
    if name is None:
        return _CORRECT
    return installed(get(name).replacements())
