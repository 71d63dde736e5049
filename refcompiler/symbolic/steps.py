"""What ``refcompiler.symbolic.interpreter`` plans once per program: an
operand's words (``Loc``), one copy's or kernel's ``Step`` (what it poisons,
writes and reads, as views of the machine's memory), the words a dealloc still
owns (``release``), where each module buffer's words are (``module_layout``,
per buffer table); an in-place result is committed in the concrete
interpreter's chunks (``execution_steps.chunk_bounds``).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping, NamedTuple

import numpy as np

from specs import Dtype, TensorType

from refcompiler import memos
from refcompiler.execution_steps import chunk_bounds
from refcompiler.ir import Buffer, BufferKind, Instr
from refcompiler.symbolic.terms import SORT_CODE, Sort

__all__ = ["Loc", "Step", "Layout", "form", "load_words", "merged", "module_layout", "release", "sort_of"]


def sort_of(dtype: Dtype) -> Sort:
    return Sort.I if dtype is Dtype.INT32 else Sort.F


class Loc:
    """Words ``lo:hi`` of the machine's memory seen as ``type``; ``words`` is
    that slice of ``memory`` and ``form`` is ``form(self)``, each made once.
    One memory holds every word (the module buffers', then the arena's), so
    two operands overlap exactly when their word ranges do."""

    __slots__ = ("lo", "hi", "type", "words", "form")

    def __init__(self, memory: np.ndarray, lo: int, hi: int, type_: TensorType) -> None:
        self.lo, self.hi, self.type = lo, hi, type_
        self.words = memory[lo:hi]  # a view: made once
        self.form = (type_.shape, type_.dtype is Dtype.INT32)

    def overlaps(self, other: "Loc") -> bool:
        return self.lo < other.hi and other.lo < self.hi

    def same_words(self, other: "Loc") -> bool:
        return self.lo == other.lo and self.hi == other.hi


def form(loc: Loc) -> tuple[tuple[int, ...], bool]:
    """All a read's values depend on besides its words: its shape and whether it
    is read as int32 (``read``); cheaper to hash than the type (a tuple of its fields)."""
    return loc.form


class Step:
    """One instruction resolved against a machine's memory, the same in every
    run (offsets, views and in-place lists are fixed): ``poisoned`` (word
    slices, the fewest covering the ranges given: ``merged``) written with
    poison before it computes, ``targets`` written in order chunk by chunk
    (``aliased``: the target overlaps a read, so later chunks recompute),
    ``reads`` what its values are a function of, with ``key`` (the swap points
    installed, the op, attributes and each read's ``form``; interned to an int
    per term table). Every slice is a view of the machine's memory, made once."""

    __slots__ = ("instr", "opcode", "poisoned", "targets", "aliased", "chunked", "reads", "read_types", "n_in", "attrs", "key")

    def __init__(
        self,
        instr: Instr,
        memory: np.ndarray,
        poisoned: list[tuple[int, int]],
        targets: list[Loc],
        aliased: list[bool],
        reads: list[Loc],
        n_in: int,
        attrs: Mapping[str, object] | None,
        key: int,
    ) -> None:
        self.instr, self.opcode, self.aliased = instr, instr.opcode, aliased
        self.poisoned = [memory[lo:hi] for lo, hi in merged(poisoned)] if poisoned else []
        self.targets, self.chunked = [], ([] if True in aliased else None)
        for t, a in zip(targets, aliased, strict=True):
            self.targets.append(t.words)
            if self.chunked is not None:
                self.chunked.append(chunk_bounds(t.type.size) if a else ())
        self.reads, self.read_types = [], []
        for r in reads:
            self.reads.append(r.words)
            self.read_types.append(r.type)
        self.n_in, self.attrs, self.key = n_in, attrs, key


def merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The fewest disjoint word ranges, in order, covering the words of ``ranges``
    (poison written once per word: every range gets the same value)."""
    if len(ranges) < 2:  # the common case: nothing to merge
        return [r for r in ranges if r[0] < r[1]]
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if lo >= hi:
            continue
        if out and lo <= out[-1][1]:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


class Layout(NamedTuple):
    """Module buffers laid out one after another in one array of ``size`` words:
    ``spans`` (first word, end) per buffer name (read-only), ``outputs`` those ``read_back``
    reads (name, first word, end, type), ``sort_codes`` each word's sort code,
    ``by_name`` each buffer by name (``Program.buffer_by_name``; shared: read-only),
    ``output_words`` the outputs' words in order (an index array; read-only) and
    ``output_codes`` their sort codes."""

    size: int
    spans: Mapping[str, tuple[int, int]]
    outputs: tuple[tuple[str, int, int, TensorType], ...]
    sort_codes: bytes
    by_name: Mapping[str, Buffer]
    output_words: np.ndarray
    output_codes: bytes


def module_layout(buffers: tuple[Buffer, ...]) -> Layout:
    """The ``Layout`` of ``buffers``, kept per tuple object (one per graph's programs)."""
    found = _LAYOUTS.get(id(buffers))
    if found is not None and found[0] is buffers:
        return found[1]
    spans, outputs, at = {}, [], 0
    kept = (BufferKind.PLACEHOLDER, BufferKind.OWNED)
    for b in buffers:
        size = b.type.size
        spans[b.name] = (at, at + size)
        if b.kind in kept:
            outputs.append((b.name, at, at + size, b.type))
        at += size
    codes = b"".join(bytes([SORT_CODE[sort_of(b.type.dtype)]]) * b.type.size for b in buffers)
    index = np.array([w for _, lo, hi, _ in outputs for w in range(lo, hi)], dtype=np.int64)
    index.flags.writeable = False
    output_codes = np.frombuffer(codes, dtype=np.uint8)[index].tobytes()
    layout = Layout(at, MappingProxyType(spans), tuple(outputs), codes, MappingProxyType({b.name: b for b in buffers}), index, output_codes)
    if len(_LAYOUTS) >= _LAYOUTS_KEPT:
        _LAYOUTS.clear()
    _LAYOUTS[id(buffers)] = (buffers, layout)  # the tuple kept: its id is not reused while here
    return layout


def load_words(words: np.ndarray, layout: Layout, values: Mapping[str, np.ndarray]) -> None:
    """Write each of ``values`` that names a module buffer of ``layout`` at its
    words of ``words`` (the module words, in ``layout`` order)."""
    spans = layout.spans
    for name, value in values.items():
        span = spans.get(name)
        if span is not None:
            words[span[0] : span[1]] = np.asarray(value, dtype=np.int64).reshape(-1)


_LAYOUTS: dict[int, tuple] = memos.kept({})
_LAYOUTS_KEPT = 4096  # bounded: emptied when full


def release(owner: list, lo: int, hi: int, me: object) -> list[tuple[int, int]]:
    """The runs ``(a, b)`` of ``owner[lo:hi]`` that ``me`` owns, in order, each
    then owned by none (-1; no owner is -1): what a dealloc of ``me`` poisons."""
    words = owner[lo:hi]
    mine = words.count(me)
    if mine == len(words):  # the common case: the whole region
        owner[lo:hi] = [-1] * len(words)
        return [(lo, hi)] if words else []
    runs: list[tuple[int, int]] = []
    for w in range(lo, hi) if mine else ():
        if owner[w] == me:
            owner[w] = -1
            if runs and runs[-1][1] == w:
                runs[-1] = (runs[-1][0], w + 1)
            else:
                runs.append((w, w + 1))
    return runs
