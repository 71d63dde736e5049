"""Terms to Z3: uninterpreted functions stay uninterpreted, the rest is decided."""

from __future__ import annotations

from refcompiler.proofs import smt
from refcompiler.symbolic.encode import Encoder
from refcompiler.symbolic.terms import Sort, Terms


def _decide(t: Terms, *facts: int, differ: tuple[int, int]) -> smt.SatResult:
    e = Encoder(t)
    s = smt.general_solver()
    for f in facts:
        s.add(e.expr(f))
    s.add(e.expr(differ[0]) != e.expr(differ[1]))
    return smt.check(s)


def test_different_uninterpreted_terms_can_differ():
    t = Terms()
    a, b = t.sym("a", Sort.F), t.sym("b", Sort.F)
    assert _decide(t, differ=(t.app("add", (a, b)), t.app("add", (b, a)))) is smt.SatResult.SAT


def test_selection_chains_agree_where_the_id_is_in_range():
    t = Terms()
    i, x, y = t.sym("i", Sort.I), t.sym("x", Sort.F), t.sym("y", Sort.F)
    first = t.ite(t.eq(i, t.iconst(0)), x, t.ite(t.eq(i, t.iconst(1)), y, t.app("oob", ())))
    second = t.ite(t.eq(i, t.iconst(1)), y, x)
    in_range = t.and_(t.le(t.iconst(0), i), t.le(i, t.iconst(1)))
    assert _decide(t, in_range, differ=(first, second)) is smt.SatResult.UNSAT
    assert _decide(t, differ=(first, second)) is smt.SatResult.SAT


def test_counts_and_poison_encode():
    t = Terms()
    i, j = t.sym("i", Sort.I), t.sym("j", Sort.I)
    two = t.count([t.eq(i, t.iconst(3)), t.eq(j, t.iconst(3))])
    same = t.and_(t.eq(i, t.iconst(3)), t.eq(j, t.iconst(3)))
    assert _decide(t, same, differ=(two, t.iconst(2))) is smt.SatResult.UNSAT
    assert _decide(t, differ=(t.poison_f, t.sym("x", Sort.F))) is smt.SatResult.SAT
    e = Encoder(t)
    deep = t.sym("x", Sort.F)
    for _ in range(5000):  # the walk is not recursive
        deep = t.app("neg", (deep,))
    assert e.expr(deep) is not None
