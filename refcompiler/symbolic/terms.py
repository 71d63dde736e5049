"""Hash-consed terms: the values of the symbolic interpreters (DESIGN §7.4).

A term is an ``int``, an index into one ``Terms`` table; the table keeps each
distinct node once, so two computations that build the same expression get
the same id and their equality is proved by construction. Tensors of terms
are ``int64`` numpy arrays of ids, which lets the data-movement kernels
(transpose, concat, roll, reshape) run unchanged on them.

Sorts: ``F`` (a float32 value; an uninterpreted sort, since kernels are
trusted as uninterpreted functions), ``I`` (an int32 value, a mathematical
integer that the validator bounds to int32), ``B`` (a condition). Nodes:

- ``("sym", name)``: an input element; ``("fconst", bits)`` a float32
  constant by its bits; ``("iconst", v)``; ``("bconst", v)``;
- ``("poison",)``: the poison of a float32 word (an int32 word's poison is
  the integer -1, its bits as the concrete interpreter writes them);
- ``("app", f, args)``: the uninterpreted function ``f`` on ``args``;
- ``("ite", c, a, b)``, ``("eq", a, b)``, ``("le", a, b)``, ``("and", ...)``,
  ``("not", a)``, ``("isum", ...)``: the interpreted part, folded when the
  operands are constants or equal.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from specs import FastEnum

from refcompiler.errors import UsageError

__all__ = ["Sort", "Terms", "SORT_CODE", "TermLimit"]


class TermLimit(UsageError):
    """The symbolic validation would build more terms, or terms of more
    arguments in all, than its limit (``max_terms``; ``refc validate
    --max-terms``). A usage error: the graph is too large for the limit."""


class Sort(FastEnum):
    F = "float32"
    I = "int32"  # noqa: E741 (the sort's name)
    B = "bool"


SORT_CODE = {Sort.F: 0, Sort.I: 1, Sort.B: 2}  # ``Terms.sort_codes``
_CONSTANTS = frozenset({"iconst", "bconst"})  # the nodes ``constant_value`` gives a value of


ARGUMENTS_PER_TERM = 4  # the arguments of all applications together, per term of the limit (about 36 bytes each)


class Terms:
    """One table of hash-consed terms; every term built by a validation lives
    here. At most ``limit`` of them: one more raises ``UsageError``."""

    def __init__(self, *, limit: int | None = None) -> None:
        self.limit = limit
        self.arguments = 0  # the arguments of every application made: memory beside the count of terms
        self.nodes: list[tuple] = []
        self.sorts: list[Sort] = []
        self._codes = np.zeros(1024, dtype=np.uint8)  # sort code per term, for vectorised checks
        self._coded = 0  # terms whose code is in ``_codes``: filled when asked (``_sort_codes``)
        self.index: dict[tuple, int] = {}
        self.kernel_memo: dict[tuple, tuple] = {}  # see ``kernels.run_symbolic_kernel``
        self.step_memo: dict[tuple, tuple] = {}  # see ``interpreter.SymbolicMachine.compute``
        self.part_memo: dict[tuple, tuple] = {}  # see ``kernels``: a stateful kernel's terms made from its inputs alone
        self.step_keys: dict[tuple, int] = {}
        self.true = self._make(("bconst", True), Sort.B)
        self.false = self._make(("bconst", False), Sort.B)
        self.poison_f = self._make(("poison",), Sort.F)
        self.poison_i = self.iconst(-1)

    def _make(self, node: tuple, sort: Sort) -> int:
        found = self.index.get(node)
        return found if found is not None else self._new(node, sort)

    def _new(self, node: tuple, sort: Sort) -> int:
        """Add ``node``, known not to be in the table."""
        tid = len(self.nodes)
        if self.limit is not None and tid >= self.limit:
            raise TermLimit(f"the symbolic validation needs more than {self.limit} terms (the limit)")
        self.nodes.append(node)
        self.sorts.append(sort)
        self.index[node] = tid
        return tid

    def _sort_codes(self) -> np.ndarray:
        """``_codes`` with every term's code: the terms made since the last call
        are coded here in one go (a numpy store per term costs more)."""
        n = len(self.sorts)
        if self._coded < n:
            if n > self._codes.size:
                self._codes = np.concatenate([self._codes, np.zeros(max(n, self._codes.size), dtype=np.uint8)])
            self._codes[self._coded : n] = [SORT_CODE[s] for s in self.sorts[self._coded : n]]
            self._coded = n
        return self._codes

    def intern_key(self, key: tuple) -> int:
        """A small int standing for the hashable ``key``, the same for equal keys
        of this table (so a memo key hashes an int, not the tuple, per lookup)."""
        return self.step_keys.setdefault(key, len(self.step_keys))

    def sort_codes(self, ids: np.ndarray) -> np.ndarray:
        """Each term's sort as its ``SORT_CODE`` (``uint8``), for vectorised checks."""
        return self._sort_codes()[ids]

    def all_of_sort(self, ids: np.ndarray, sort: Sort) -> bool:
        """Whether every term in ``ids`` has ``sort``."""
        codes = self._sort_codes()[ids]
        return codes.tobytes().count(SORT_CODE[sort]) == codes.size  # a numpy reduction costs ~5x more on these few words

    def sort(self, t: int) -> Sort:
        return self.sorts[t]

    def constant_value(self, t: int) -> object | None:
        """The value of a constant int or condition term, else ``None``."""
        node = self.nodes[t]
        return node[1] if node[0] in _CONSTANTS else None

    # -- leaves ------------------------------------------------------------------

    def sym(self, name: str, sort: Sort) -> int:
        return self._make(("sym", name, sort), sort)

    def fconst(self, value: float) -> int:
        bits = int(np.asarray(value, dtype=np.float32).view(np.uint32))
        return self._make(("fconst", bits), Sort.F)

    def iconst(self, value: int) -> int:
        return self._make(("iconst", int(value)), Sort.I)

    def poison(self, sort: Sort) -> int:
        return self.poison_f if sort is Sort.F else self.poison_i

    # -- uninterpreted functions ---------------------------------------------------

    def app(self, f: str, args: Iterable[int], sort: Sort = Sort.F) -> int:
        node = ("app", f, tuple(map(int, args)))
        found = self.index.get(node)
        if found is not None:
            return found
        self.arguments += len(node[2])
        if self.limit is not None and self.arguments > self.limit * ARGUMENTS_PER_TERM:
            # a matmul's element is one term of 2k arguments: a 600 x 600 product held 432 million of them
            raise TermLimit(f"the symbolic validation needs terms of more than {self.limit * ARGUMENTS_PER_TERM} arguments in all "
                            f"({ARGUMENTS_PER_TERM} per term of the limit)")
        return self._new(node, sort)

    def as_sort(self, t: int, sort: Sort) -> int:
        """``t`` read as a word of ``sort``: poison stays poison; a word of the
        other sort is a reinterpretation of its bits (an uninterpreted cast)."""
        if self.sorts[t] is sort:
            return t
        if t in (self.poison_f, self.poison_i):
            return self.poison(sort)
        return self.app(f"bits_as_{sort.value}", (t,), sort)

    # -- the interpreted part --------------------------------------------------------

    def eq(self, a: int, b: int) -> int:
        if a == b:
            return self.true
        na, nb = self.nodes[a], self.nodes[b]  # constant_value, inlined: the hot call of the stateful kernels
        if na[0] in _CONSTANTS and nb[0] in _CONSTANTS:
            return self.true if na[1] == nb[1] else self.false
        return self._make(("eq", a, b) if a < b else ("eq", b, a), Sort.B)

    def le(self, a: int, b: int) -> int:
        va, vb = self.constant_value(a), self.constant_value(b)
        if va is not None and vb is not None:
            return self.true if va <= vb else self.false
        return self.true if a == b else self._make(("le", a, b), Sort.B)

    def not_(self, a: int) -> int:
        v = self.constant_value(a)
        if v is not None:
            return self.false if v else self.true
        return self._make(("not", a), Sort.B)

    def and_(self, *conds: int) -> int:
        kept = []
        for c in conds:
            if c == self.false:
                return self.false
            if c != self.true and c not in kept:
                kept.append(c)
        if not kept:
            return self.true
        return kept[0] if len(kept) == 1 else self._make(("and", *sorted(kept)), Sort.B)

    def ite(self, c: int, a: int, b: int) -> int:
        if a == b or c == self.true:
            return a
        if c == self.false:
            return b
        return self._make(("ite", c, a, b), self.sorts[a])

    def isum(self, terms: Iterable[int]) -> int:
        """The integer sum of int terms (constants folded)."""
        total, rest = 0, []
        for t in terms:
            v = self.constant_value(t)
            if v is None:
                rest.append(t)
            else:
                total += int(v)  # type: ignore[call-overload]
        if not rest:
            return self.iconst(total)
        if total:
            rest.append(self.iconst(total))
        return rest[0] if len(rest) == 1 else self._make(("isum", *rest), Sort.I)

    def count(self, conds: Iterable[int]) -> int:
        """How many of ``conds`` hold, as an int term."""
        one, zero = self.iconst(1), self.iconst(0)
        return self.isum(self.ite(c, one, zero) for c in conds)

    def select(self, conds: Sequence[int], values: Sequence[int], default: int) -> int:
        """``default``, then ``ite(c, v, that)`` for each ``c, v`` in turn: the
        last pair is the outermost ``ite``. Each ``ite`` is made (or found) in
        that order, as the calls one by one would make them."""
        ite, out = self.ite, default
        for c, a in zip(conds, values, strict=True):
            out = ite(c, a, out)
        return out

    def add_where(self, f: str, acc: int, conds: Sequence[int], addends: Sequence[int]) -> int:
        """``acc``, then ``ite(c, app(f, (that, g)), that)`` for each ``c, g`` in
        turn (``np.add.at``'s order). Each application is made even where ``c``
        is false, before its ``ite``, as the calls one by one would make them."""
        ite, make = self.ite, self._make
        for c, g in zip(conds, addends, strict=True):
            acc = ite(c, make(("app", f, (acc, g)), Sort.F), acc)
        return acc

    # -- tensors -------------------------------------------------------------------

    def map(self, f: str, *arrays: np.ndarray, sort: Sort = Sort.F) -> np.ndarray:
        """``f`` applied element by element, numpy broadcasting the operands."""
        first = arrays[0]
        if all(type(a) is np.ndarray and a.shape == first.shape for a in arrays):
            parts: Iterable[np.ndarray] = arrays  # nothing to broadcast (the common case)
        else:
            parts = np.broadcast_arrays(*arrays)
            first = parts[0]
        columns = [p.reshape(-1).tolist() for p in parts]
        index, new, out = self.index, self._new, []
        for args in zip(*columns, strict=True):  # the hot loop of a validation: _make() inlined
            node = ("app", f, args)
            found = index.get(node)
            out.append(found if found is not None else new(node, sort))
        return np.array(out, dtype=np.int64).reshape(first.shape)
