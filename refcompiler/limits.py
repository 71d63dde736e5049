"""Resource limits: what a file can make refc use (DESIGN §10, "a file is data").

Each limit has a default and an environment variable that overrides it (a
whole number). A breach is a ``LimitExceeded`` (exit 2) naming the file or
node and the limit, raised before the memory is used: file sizes before
reading, ``.npz`` members from their headers before decompressing, tensor
sizes by shape inference before anything is allocated; the runs of ``refc
run --runs N`` (and those times a graph's bytes) before the first run.

The rank of a shape (at most ``MAX_RANK``) is part of the file format
(``specs/refc-graph-1.schema.json``), not a limit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from refcompiler.errors import LimitExceeded, UsageError

__all__ = ["Limit", "LIMITS", "MAX_RANK", "value", "values", "check", "over", "shown", "printable", "clipped", "key_step"]

MAX_RANK = 8


@dataclass(frozen=True)
class Limit:
    env: str
    default: int
    what: str  # "elements in one tensor", as a message says "more than N <what>"


# A reference compiler runs small graphs; larger is a mistake or an attack, not a workload.
LIMITS = {
    "elements": Limit("REFC_MAX_ELEMENTS", 1 << 24, "elements in one tensor"),
    "bytes": Limit("REFC_MAX_BYTES", 1 << 30, "bytes of storage and intermediate results in one graph"),
    "file_bytes": Limit("REFC_MAX_FILE_BYTES", 64 << 20, "bytes in one input file (an .npz: once decompressed)"),
    "nodes": Limit("REFC_MAX_NODES", 100_000, "nodes and storage entries in one graph file"),
    # `refc run --runs N`: each run is bounded by the limits above, so these bound the
    # time (a tiny graph runs in about 50 us, one of a gigabyte in seconds)
    "runs": Limit("REFC_MAX_RUNS", 100_000, "runs of one graph in a row"),
    "run_bytes": Limit("REFC_MAX_RUN_BYTES", 1 << 36, "bytes of storage and intermediate results over all runs"),
}


def value(name: str) -> int:
    """The limit ``name`` now: its environment variable, else its default."""
    limit = LIMITS[name]
    text = os.environ.get(limit.env)
    if text is None or text == "":
        return limit.default
    if not text.isascii() or not text.isdigit() or len(text) > _MAX_DIGITS or int(text) < 1:
        raise UsageError(f"{limit.env}={shown(text)}: expected a whole number of at least 1 (of at most {_MAX_DIGITS} digits)")
    return int(text)


_MAX_DIGITS = 4000  # int() of a longer string raises past Python's limit (4300 digits), an internal error


def values() -> tuple[int, ...]:
    """Every limit now, in ``LIMITS``' order: what a remembered verdict that
    depends on them is kept under."""
    return tuple(value(name) for name in LIMITS)


def check(name: str, amount: int, where: str, *, path: str | None = None) -> None:
    """Raise ``LimitExceeded`` when ``amount`` is above the limit ``name``;
    ``where`` names the place (``"node 'ab' (add) result 0"``, ``"members"``, or
    nothing: the whole file) in the file ``path``, when there is one."""
    bound = value(name)
    if amount > bound:
        limit = LIMITS[name]
        lead = f"{where}: " if where else ""
        raise LimitExceeded(f"{lead}needs {_count(amount)} {limit.what}, more than the limit {bound} ({limit.env})", path=path)


def over(name: str, path: str) -> LimitExceeded:
    """The error for the file ``path`` having more than the limit ``name`` (the
    amount unknown: reading stopped at the limit)."""
    limit = LIMITS[name]
    return LimitExceeded(f"more than the limit of {value(name)} {limit.what} ({limit.env})", path=path)


def _count(n: int) -> str:
    return str(n) if n < 10**30 else _magnitude(n)


def _magnitude(n: int) -> str:
    # str() of an int over 4300 digits raises in Python 3.11+; the bit length does not
    return f"{'-' if n < 0 else ''}about 10**{int((abs(n).bit_length() - 1) * 0.30103)}"


def shown(value: object, limit: int = 60) -> str:
    """``value`` for a one-line message: ``repr`` (so control characters and
    ANSI escapes are escaped, not printed), cut to about ``limit`` characters."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return _magnitude(value)
    text = repr(value)
    if len(text) <= limit:
        return text
    if isinstance(value, str):  # the count is of the string's own characters, not its quoted repr's
        return text[: limit - 5] + f"...' ({len(value)} characters)"
    return text[: limit - 5] + f"... ({len(text)} characters written out)"


def printable(text: str) -> str:
    """``text`` with each character that is not printable (a control character,
    a lone surrogate from a file name that is not UTF-8) written as its escape,
    the rest as it is: for a name or message made of a file's strings."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def clipped(text: str, limit: int) -> str:
    """``printable(text)`` cut to at most ``limit`` characters (ending in
    ``...`` when cut): a file's or a user's string for a message or a picture."""
    text = printable(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def key_step(key: str) -> str:
    """A key of one of a file's objects as a step of a message's JSON path:
    ``.key`` for a short printable ASCII key, else ``[<shown(key)>]``, so
    that a key with a line break or an ANSI escape cannot split or colour the
    one-line message (``attrs['a\\nb']``)."""
    return f".{key}" if key.isascii() and key.isprintable() and len(key) <= 128 else f"[{shown(key)}]"
