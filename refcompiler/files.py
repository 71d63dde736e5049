"""Reading and writing files safely: JSON whose every failure (no file, bad
JSON, a duplicate key, too deep a nesting) is a ``MalformedInput`` naming the
file, and atomic writes (a temporary file beside the target, then a rename),
so that an interrupted write leaves no half-written file."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Callable

from refcompiler import limits
from refcompiler.errors import MalformedInput

__all__ = ["read_json", "write_atomic", "write_json_atomic"]


def read_json(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON file; any failure is a ``MalformedInput`` naming the file.
    At most ``REFC_MAX_FILE_BYTES`` are read (``/dev/zero`` ends at once)."""
    p = str(path)
    bound = limits.value("file_bytes")
    try:
        with open(p, "rb") as f:
            data = f.read(bound + 1)
        if len(data) > bound:
            raise limits.over("file_bytes", p)
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise MalformedInput("no such file", path=p) from None
    except (OSError, UnicodeDecodeError) as e:
        raise MalformedInput(f"cannot read: {e}", path=p) from None
    if not text.strip():
        raise MalformedInput("the file is empty", path=p)
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as e:
        raise MalformedInput(f"duplicate key {e.key!r} in one JSON object (JSON keeps only the last)", path=p) from None
    except json.JSONDecodeError as e:
        raise MalformedInput(f"not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})", path=p) from None
    except ValueError as e:  # an integer of more than 4300 digits (Python's int limit)
        raise MalformedInput(f"not a number refc reads ({e})", path=p) from None
    except RecursionError:
        # json.loads recurses once per nesting level; no graph nests this deep
        raise MalformedInput("JSON nested too deeply", path=p) from None


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads keeps the last of two equal keys: a second "nodes" would hide the first
    doc: dict[str, Any] = {}
    for key, value in pairs:
        if key in doc:
            raise _DuplicateKey(key)
        doc[key] = value
    return doc


def write_atomic(path: str | os.PathLike[str], write: Callable[[BinaryIO], None]) -> None:
    """Call ``write`` on a temporary file beside ``path``, then rename it into place,
    so that an interrupted write leaves no half-written file.

    Missing parent directories are created. The file gets the permissions a
    plain ``open`` would give (the umask), not ``mkstemp``'s 0600. A ``path``
    that exists and is not a regular file (``/dev/null``, a pipe) is written
    directly: renaming over it would replace the device, not write to it.
    Raises ``OSError``.
    """
    target = Path(os.path.realpath(path))  # through a symlink to the file it names
    if target.exists() and not target.is_file():
        if target.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        with open(target, "wb") as f:
            write(f)
        return
    for parent in (target.parent, *target.parent.parents):
        if parent.exists():
            if not parent.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, f"{parent} is not a directory", str(parent))
            break
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)  # the only way to read it is to set it
    os.umask(mask)
    return mask


def write_json_atomic(path: str | os.PathLike[str], doc: Any) -> None:
    """Write ``doc`` as JSON through ``write_atomic``."""
    text = json.dumps(doc, indent=1) + "\n"
    write_atomic(path, lambda f: f.write(text.encode("utf-8")))
