"""The one module that imports z3: small helpers the proof modules build on.

Everything else in the project talks to Z3 through these functions, so the
dependency sits in one corner (STYLE: "z3 is imported in one place") and the
solver configuration is chosen once:

- ``difference_solver``: a solver for conjunctions of ``x < y`` over integers
  (schedule positions). Z3's default arithmetic core (simplex) does not scale
  to thousands of such constraints (it times out at 4,000 nodes); the
  difference-logic core (``QF_IDL``, ``smt.arith.solver=1``, auto-config
  off) decides 10,000 nodes in well under a second.
- ``solver`` / ``optimizer``: general linear integer arithmetic (the
  allocation proofs).
- ``check`` maps Z3's answer to ``SatResult``; ``unknown`` (a timeout, an
  interrupt, an incomplete tactic) stays ``UNKNOWN`` and a caller must never
  read it as a proof.

Z3 expressions support the comparison and arithmetic operators, so callers
write ``pos[u] < pos[v]`` without importing z3; the connectives they need are
re-exported below as plain functions.
"""

from __future__ import annotations

import enum
import time
from typing import Any, Iterable, Mapping

import z3

__all__ = [
    "SatResult",
    "Expr",
    "difference_solver",
    "solver",
    "optimizer",
    "int_vars",
    "check",
    "int_model",
    "minimize",
    "all_of",
    "any_of",
    "count_true",
    "remaining_ms",
    "general_solver",
    "value_sort",
    "int_sort",
    "bool_sort",
    "constant",
    "function",
    "apply",
    "if_then_else",
    "int_literal",
    "sum_of",
    "negation",
    "model_value",
]

Expr = Any  # a z3 expression; typed loosely so that callers need not import z3


class SatResult(enum.Enum):
    SAT = "sat"
    UNSAT = "unsat"
    UNKNOWN = "unknown"


def remaining_ms(deadline: float | None) -> int | None:
    """Milliseconds left until ``deadline`` (a ``time.monotonic()`` value), at
    least 0; ``None`` when there is no deadline."""
    if deadline is None:
        return None
    return max(0, int((deadline - time.monotonic()) * 1000))


def difference_solver() -> z3.Solver:
    """A solver configured for integer difference logic (``x < y`` constraints)."""
    s = z3.SolverFor("QF_IDL")
    s.set("auto_config", False)
    s.set("smt.arith.solver", 1)
    return s


def solver() -> z3.Solver:
    """A solver for linear integer arithmetic with Boolean structure."""
    return z3.SolverFor("QF_LIA")


def optimizer() -> z3.Optimize:
    return z3.Optimize()


def int_vars(names: Iterable[str], prefix: str = "") -> dict[str, Expr]:
    """One integer constant per name (``prefix`` keeps families apart)."""
    return {n: z3.Int(f"{prefix}{n}") for n in names}


def all_of(*terms: Expr) -> Expr:
    return z3.And(*terms) if terms else z3.BoolVal(True)


def any_of(*terms: Expr) -> Expr:
    return z3.Or(*terms) if terms else z3.BoolVal(False)


def count_true(terms: Iterable[Expr]) -> Expr:
    """The number of true Boolean terms, as an integer expression."""
    terms = list(terms)
    return z3.Sum([z3.If(t, 1, 0) for t in terms]) if terms else z3.IntVal(0)


def check(s: z3.Solver | z3.Optimize, *assumptions: Expr, deadline: float | None = None) -> SatResult:
    """Check ``s`` under ``assumptions`` within ``deadline`` (``time.monotonic()``).

    A deadline already passed gives ``UNKNOWN`` without calling Z3.
    """
    ms = remaining_ms(deadline)
    if ms is not None:
        if ms == 0:
            return SatResult.UNKNOWN
        s.set("timeout", ms)
    answer = s.check(*assumptions)
    if answer == z3.sat:
        return SatResult.SAT
    if answer == z3.unsat:
        return SatResult.UNSAT
    return SatResult.UNKNOWN


def int_model(s: z3.Solver | z3.Optimize, variables: Mapping[str, Expr]) -> dict[str, int]:
    """The value of each variable in the model of the last SAT check (unconstrained ones: 0)."""
    m = s.model()
    return {name: m.eval(v, model_completion=True).as_long() for name, v in variables.items()}


def minimize(o: z3.Optimize, objective: Expr) -> None:
    o.minimize(objective)


# -- uninterpreted functions (the symbolic validator, refcompiler.symbolic) ----------

def general_solver() -> z3.Solver:
    """A solver for any logic Z3 supports (uninterpreted sorts and functions with integers)."""
    return z3.Solver()


def value_sort() -> Any:
    """An uninterpreted sort: float32 values whose kernels the validator trusts
    as uninterpreted functions."""
    return z3.DeclareSort("F32")


def int_sort() -> Any:
    return z3.IntSort()


def bool_sort() -> Any:
    return z3.BoolSort()


def constant(name: str, sort: Any) -> Expr:
    return z3.Const(name, sort)


def function(name: str, domain: Iterable[Any], result: Any) -> Any:
    """An uninterpreted function declaration ``name : domain -> result``."""
    return z3.Function(name, *domain, result)


def apply(fn: Any, args: Iterable[Expr]) -> Expr:
    return fn(*args)


def if_then_else(cond: Expr, a: Expr, b: Expr) -> Expr:
    return z3.If(cond, a, b)


def int_literal(value: int) -> Expr:
    return z3.IntVal(value)


def sum_of(terms: Iterable[Expr]) -> Expr:
    terms = list(terms)
    return z3.Sum(terms) if terms else z3.IntVal(0)


def negation(term: Expr) -> Expr:
    return z3.Not(term)


def model_value(s: z3.Solver, term: Expr) -> int | str:
    """``term``'s value in the model of the last SAT check: an ``int`` for an
    integer term, else a string naming the element of its uninterpreted sort
    (equal strings: the same element)."""
    v = s.model().eval(term, model_completion=True)
    return v.as_long() if z3.is_int_value(v) else str(v)
