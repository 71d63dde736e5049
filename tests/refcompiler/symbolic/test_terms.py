"""Hash-consed terms: one id per distinct node, the interpreted part folded."""

from __future__ import annotations

import numpy as np
import pytest

from refcompiler.errors import UsageError
from refcompiler.symbolic.terms import ARGUMENTS_PER_TERM, Sort, Terms


def test_equal_expressions_get_one_id():
    t = Terms()
    a, b = t.sym("a", Sort.F), t.sym("b", Sort.F)
    assert t.app("add", (a, b)) == t.app("add", (a, b))
    assert t.app("add", (a, b)) != t.app("add", (b, a))
    assert t.sym("a", Sort.I) != a


def test_conditions_fold_on_constants_and_equal_operands():
    t = Terms()
    i, x, y = t.sym("i", Sort.I), t.sym("x", Sort.F), t.sym("y", Sort.F)
    assert t.eq(t.iconst(2), t.iconst(2)) == t.true and t.eq(t.iconst(2), t.iconst(3)) == t.false
    assert t.eq(i, i) == t.true and t.eq(i, t.iconst(0)) not in (t.true, t.false)
    assert t.ite(t.true, x, y) == x and t.ite(t.false, x, y) == y and t.ite(t.eq(i, t.iconst(0)), x, x) == x
    assert t.and_(t.true, t.le(t.iconst(0), t.iconst(1))) == t.true
    assert t.and_(t.le(i, t.iconst(1)), t.false) == t.false
    assert t.isum([t.iconst(1), t.iconst(2)]) == t.iconst(3)
    assert t.count([t.true, t.false, t.true]) == t.iconst(2)


def test_poison_is_one_word_seen_in_either_sort():
    t = Terms()
    assert t.as_sort(t.poison_f, Sort.I) == t.iconst(-1) == t.poison_i
    assert t.as_sort(t.iconst(-1), Sort.F) == t.poison_f
    x = t.sym("x", Sort.F)
    cast = t.as_sort(x, Sort.I)
    assert t.sort(cast) is Sort.I and cast != x and t.as_sort(x, Sort.F) == x


def test_float_constants_are_kept_by_bits():
    t = Terms()
    assert t.fconst(0.1) == t.fconst(float(np.float32(0.1)))
    assert t.fconst(0.0) != t.fconst(-0.0)


def test_map_broadcasts_as_numpy():
    t = Terms()
    a = np.array([[t.sym("a0", Sort.F)], [t.sym("a1", Sort.F)]])
    b = np.array([t.sym("b0", Sort.F), t.sym("b1", Sort.F), t.sym("b2", Sort.F)])
    y = t.map("add", a, b)
    assert y.shape == (2, 3) and y[1, 2] == t.app("add", (a[1, 0], b[2]))
    assert t.all_of_sort(y, Sort.F) and not t.all_of_sort(np.array([t.iconst(1)]), Sort.F)


def test_the_arguments_of_all_applications_are_bounded_by_the_limit_too():
    # a 600 x 600 matmul is 360,000 terms of 1,200 arguments each: 5.8 GB before the count of terms was reached
    terms = Terms(limit=100)
    a = terms.sym("a", Sort.F)
    terms.app("dot", [a] * (100 * ARGUMENTS_PER_TERM - 10))
    terms.app("dot", [a] * (100 * ARGUMENTS_PER_TERM - 10))  # the same term again: nothing new
    with pytest.raises(UsageError, match=r"more than 400 arguments in all \(4 per term of the limit\)"):
        terms.app("dot", [a] * 11)
