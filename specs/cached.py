"""``cached_property`` without a lock: the value computed on first access is
kept in the instance's ``__dict__``, where later accesses find it without
calling the descriptor.

Why not ``functools.cached_property``: in Python 3.11 each first access takes
one lock shared by every instance of the class, and checks the instance's
dictionary twice; the project's immutable values (tensor types, graphs,
programs) are made by the thousand per fuzz case and each is asked for its
cached facts once, so that lock was 1.5% of a campaign. Two threads may both
compute a value, as Python 3.12's version allows: every property cached so
is a deterministic function of an immutable instance, so they keep equal
values."""

from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar, overload

__all__ = ["cached_property"]

T = TypeVar("T")


class cached_property(Generic[T]):  # noqa: N801  # named as the functools one it stands for
    """A property computed once per instance (which needs a ``__dict__``)."""

    def __init__(self, func: Callable[[Any], T]) -> None:
        self.func = func
        self.attrname: str | None = None
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.attrname = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> cached_property[T]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> T: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> T | cached_property[T]:
        if instance is None:
            return self
        value = instance.__dict__[self.attrname] = self.func(instance)  # type: ignore[index]  # set by __set_name__
        return value
