"""``specs.cached.cached_property``: computed on first access, then read from the instance."""

from __future__ import annotations

from dataclasses import dataclass

from specs.cached import cached_property


@dataclass(frozen=True)
class _Box:
    value: int

    @cached_property
    def doubled(self) -> int:
        """Twice the value."""
        calls.append(self.value)
        return 2 * self.value


calls: list[int] = []


def test_a_value_is_computed_once_per_instance_and_kept_in_it() -> None:
    calls.clear()
    a, b = _Box(1), _Box(2)
    assert (a.doubled, a.doubled, b.doubled) == (2, 2, 4)
    assert calls == [1, 2] and a.__dict__["doubled"] == 2
    assert isinstance(_Box.doubled, cached_property) and _Box.doubled.__doc__ == "Twice the value."
