"""Terms to Z3 (through ``refcompiler.proofs.smt``, the one module that imports z3).

``Encoder(terms).expr(t)`` is the Z3 expression of term ``t``: input symbols
and poison become constants (float32 ones of one uninterpreted sort), float32
constants are one constant per bit pattern, each uninterpreted function name
and signature is one Z3 function, and the interpreted nodes are Z3's
if-then-else, equality, ``<=``, conjunction and integer sum. Expressions are
built once per term (the term table is a DAG, walked without recursion).
"""

from __future__ import annotations

from typing import Any

from refcompiler.proofs import smt
from refcompiler.symbolic.terms import Sort, Terms

__all__ = ["Encoder", "INT32_MIN", "INT32_MAX"]

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


class Encoder:
    def __init__(self, terms: Terms):
        self.terms = terms
        self.f32 = smt.value_sort()
        self.exprs: dict[int, Any] = {}
        self.functions: dict[tuple, Any] = {}

    def z3_sort(self, sort: Sort) -> Any:
        return {Sort.F: self.f32, Sort.I: smt.int_sort(), Sort.B: smt.bool_sort()}[sort]

    def expr(self, root: int) -> Any:
        """The Z3 expression of term ``root``."""
        stack = [root]
        while stack:
            t = stack[-1]
            if t in self.exprs:
                stack.pop()
                continue
            missing = [a for a in self._children(t) if a not in self.exprs]
            if missing:
                stack.extend(missing)
                continue
            self.exprs[t] = self._build(t)
            stack.pop()
        return self.exprs[root]

    def _children(self, t: int) -> tuple[int, ...]:
        node = self.terms.nodes[t]
        kind = node[0]
        if kind == "app":
            return node[2]
        if kind in ("ite", "eq", "le", "and", "not", "isum"):
            return tuple(node[1:])
        return ()

    def _build(self, t: int) -> Any:
        node, sort = self.terms.nodes[t], self.terms.sorts[t]
        kind, args = node[0], [self.exprs[a] for a in self._children(t)]
        if kind == "sym":
            return smt.constant(f"{node[1]}", self.z3_sort(sort))
        if kind == "fconst":
            return smt.constant(f"f32:{node[1]:#010x}", self.f32)
        if kind == "iconst":
            return smt.int_literal(node[1])
        if kind == "bconst":
            return smt.all_of() if node[1] else smt.any_of()
        if kind == "poison":
            return smt.constant("poison", self.f32)
        if kind == "app":
            return smt.apply(self._function(node[1], node[2], sort), args)
        if kind == "ite":
            return smt.if_then_else(*args)
        if kind == "eq":
            return args[0] == args[1]
        if kind == "le":
            return args[0] <= args[1]
        if kind == "and":
            return smt.all_of(*args)
        if kind == "not":
            return smt.negation(args[0])
        if kind == "isum":
            return smt.sum_of(args)
        raise AssertionError(f"unknown term node {kind!r}")

    def _function(self, name: str, args: tuple[int, ...], result: Sort) -> Any:
        domain = tuple(self.terms.sorts[a] for a in args)
        key = (name, domain, result)
        if key not in self.functions:
            label = f"{name}:" + "".join(s.name for s in domain) + f"->{result.name}"
            self.functions[key] = smt.function(label, [self.z3_sort(s) for s in domain], self.z3_sort(result))
        return self.functions[key]
