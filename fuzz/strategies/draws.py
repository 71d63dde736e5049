"""The choices the graph builder makes, through one small interface with two
backends.

Every choice is a bounded integer (an index into a sequence is one) or a
boolean; lists, permutations and subsets are made of those. ``HypothesisDraws``
makes each one a Hypothesis draw (``st.integers(lo, hi)``, ``st.booleans()``),
so that ``graphs()`` stays a strategy that Hypothesis shrinks: towards the low
end of an integer (towards 0 when the range has it), index 0, ``False``.
``RandomDraws`` makes them with a ``random.Random`` at a fraction of the cost
and records them as Hypothesis records its choices (an int for an integer, a
bool for a boolean; nothing for an integer with one possible value), so that
the recorded sequence replayed through ``HypothesisDraws`` (``replayed``)
gives the same graph, and Hypothesis can shrink a case it never generated.
"""

from __future__ import annotations

import functools
import random
from typing import Callable, Iterable, Sequence, TypeVar

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import strategies as st
from hypothesis.database import ExampleDatabase, choices_to_bytes

__all__ = ["Draws", "HypothesisDraws", "RandomDraws", "Choice", "OneExample", "replayed"]

T = TypeVar("T")
Choice = int | bool  # a recorded choice, as Hypothesis records it


class Draws:
    """The builder's choices: ``integer`` and ``boolean`` (a backend's own),
    and what is made of them. Each method's shrinking direction (under
    ``HypothesisDraws``) is stated: the simplest value is what a failing
    graph shrinks to."""

    def integer(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi]; shrinks towards 0 if in range, else ``lo``."""
        raise NotImplementedError

    def boolean(self) -> bool:
        """True or False, one in two; shrinks to False."""
        raise NotImplementedError

    def index(self, n: int) -> int:
        """An index in [0, n) (n >= 1); shrinks to 0."""
        return self.integer(0, n - 1)

    def choice(self, seq: Sequence[T]) -> T:
        """An element of ``seq`` (non-empty), each position equally likely; shrinks to the first."""
        return seq[self.integer(0, len(seq) - 1)]  # self.index, one call fewer: the builder's most frequent choice

    def list_of(self, element: Callable[[], T], min_size: int, max_size: int) -> list[T]:
        """A list of ``element()`` draws, its length uniform in [min_size, max_size]; shrinks short."""
        return [element() for _ in range(self.integer(min_size, max_size))]

    def permutation(self, items: Sequence[T]) -> list[T]:
        """A uniformly random order of ``items`` (a forward Fisher-Yates
        shuffle, one index per position); shrinks to the given order."""
        out = list(items)
        for i in range(len(out) - 1):
            j = i + self.index(len(out) - i)
            out[i], out[j] = out[j], out[i]
        return out

    def subset(self, n: int, min_size: int = 1) -> set[int]:
        """A subset of range(n) of at least ``min_size`` (<= n) elements: its
        size uniform, then which ones (the first ``size`` of an order of
        range(n), drawn whatever the size: Hypothesis shrinks shorter choice
        sequences first, and a shortcut for the full set would make it the
        simplest); shrinks to {0, .., min_size - 1}."""
        k = self.integer(min_size, n)
        return set(self.permutation(range(n))[:k])


@functools.lru_cache(maxsize=None)
def _integers(lo: int, hi: int) -> st.SearchStrategy[int]:
    # made once per bounds: the builder asks for a few dozen distinct ranges
    return st.integers(lo, hi)


_BOOLEANS = st.booleans()


class HypothesisDraws(Draws):
    """Each choice one Hypothesis draw (``draw``: a composite's draw function)."""

    def __init__(self, draw: Callable):
        self._draw = draw

    def integer(self, lo: int, hi: int) -> int:
        if lo == hi:  # st.integers(lo, lo) is just(lo): Hypothesis records no choice
            return lo
        return self._draw(_integers(lo, hi))

    def boolean(self) -> bool:
        return self._draw(_BOOLEANS)


class RandomDraws(Draws):
    """Choices from ``rng`` (uniform), recorded in ``choices``."""

    def __init__(self, rng: random.Random):
        self._rng = rng
        self._bits = rng.getrandbits
        self.choices: list[Choice] = []

    def integer(self, lo: int, hi: int) -> int:
        if lo >= hi:
            if lo == hi:
                return lo
            raise ValueError(f"empty range for integer({lo}, {hi})")
        # rng.randint(lo, hi) as CPython makes it (randrange -> _randbelow: as
        # many random bits as the width has, redrawn until below the width):
        # the same value from the same generator, at a third of its calls
        width = hi - lo + 1
        k = width.bit_length()
        r = self._bits(k)
        while r >= width:
            r = self._bits(k)
        v = lo + r
        self.choices.append(v)
        return v

    def boolean(self) -> bool:
        v = self._rng.random() < 0.5
        self.choices.append(v)
        return v


class OneExample(ExampleDatabase):
    """A read-only example database that holds one example: with
    ``settings(database=OneExample(choices), phases=(Phase.reuse,
    Phase.shrink))`` Hypothesis replays ``choices`` first (its reuse phase)
    and, when that example fails, shrinks it. Saves and deletes are dropped.

    The example is a test's *secondary* one (its key + ``.secondary``: where
    Hypothesis keeps earlier failures that were not minimal), not a primary
    one: a failure replayed exactly from the primary key is taken as already
    shrunk, and Hypothesis skips its shrink phase (``reuse_existing_examples``
    sets ``reused_previously_shrunk_test_case``)."""

    def __init__(self, choices: Iterable[Choice]):
        super().__init__()
        self._blob = choices_to_bytes(tuple(choices))

    def fetch(self, key: bytes) -> Iterable[bytes]:
        if key.endswith(b".secondary"):
            yield self._blob

    def save(self, key: bytes, value: bytes) -> None:
        pass

    def delete(self, key: bytes, value: bytes) -> None:
        pass

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        pass


def replayed(strategy: st.SearchStrategy[T], choices: Iterable[Choice]) -> T:
    """What ``strategy`` draws from the recorded ``choices`` (Hypothesis's
    reuse phase, nothing generated); ``LookupError`` if it drew nothing."""
    got: list[T] = []

    @settings(database=OneExample(choices), phases=(Phase.reuse,), deadline=None,
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
    @given(strategy)
    def run(value: T) -> None:
        got.append(value)

    run()
    if not got:
        raise LookupError("the recorded choices replayed to no example")
    return got[0]
