"""What the symbolic interpreter plans once per program: the words a dealloc still owns."""

from __future__ import annotations

from refcompiler.symbolic.steps import release


def test_release_gives_the_runs_a_dealloc_still_owns_and_frees_them():
    owner = [1, 1, 2, 1, 1, 3, 1]
    assert release(owner, 0, 7, 1) == [(0, 2), (3, 5), (6, 7)]
    assert owner == [-1, -1, 2, -1, -1, 3, -1]
    assert release(owner, 0, 7, 1) == []  # nothing left: nothing poisoned
    assert release(owner, 2, 3, 2) == [(2, 3)] and owner[2] == -1
    assert release([], 0, 0, 1) == []
