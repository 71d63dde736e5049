"""Reading and writing files safely: JSON whose every failure (no file, bad
JSON, a duplicate key, too deep a nesting) is a ``MalformedInput`` naming the
file, and atomic writes (a temporary file beside the target, then a rename),
so that an interrupted write leaves no half-written file."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import select
import stat
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

from refcompiler import limits
from refcompiler.errors import MalformedInput

__all__ = ["read_json", "read_bounded", "FIFO_SECONDS", "write_atomic", "json_bytes", "write_json_atomic", "check_writable_dir", "check_writable_file", "locked_dir"]


FIFO_SECONDS = 30.0  # the longest refc waits for a writer to a named pipe it reads
# How deep lists and objects may nest in a JSON file refc reads. A graph's deepest
# part, a rank-8 init value, is 12 deep (11 in a case's inputs); checkers that recurse per
# level (the schema checks) would exhaust Python's stack on a few hundred levels.
MAX_NESTING = 32


def read_bounded(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a file, at most ``REFC_MAX_FILE_BYTES`` (more: ``LimitExceeded``,
    so ``/dev/zero`` ends at once); a named pipe no one writes to within
    ``FIFO_SECONDS`` is a ``MalformedInput`` (a pipe from a shell works).
    Any failure to read is a ``MalformedInput`` naming the file."""
    p = str(path)
    bound = limits.value("file_bytes")
    try:
        # non-blocking open: a FIFO with no writer would block ``open`` for ever
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            if stat.S_ISFIFO(os.fstat(fd).st_mode) and not select.select([fd], [], [], FIFO_SECONDS)[0]:
                raise MalformedInput(f"a named pipe no one wrote to within {FIFO_SECONDS:.0f} s", path=p)
            os.set_blocking(fd, True)
            data = f.read(bound + 1)
    except FileNotFoundError:
        raise MalformedInput("no such file", path=p) from None
    except OSError as e:
        raise MalformedInput(f"cannot read: {e.strerror or e}", path=p) from None
    if len(data) > bound:
        raise limits.over("file_bytes", p)
    return data


def read_json(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON file (``read_bounded``); any failure is a ``MalformedInput``
    naming the file. A UTF-8 byte order mark at the start, which some editors
    write, is read past (JSON readers may ignore one)."""
    p = str(path)
    data = read_bounded(p)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise MalformedInput(f"cannot read: {e}", path=p) from None
    if not text.strip():
        raise MalformedInput("the file is empty", path=p)
    try:
        doc = json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as e:
        raise MalformedInput(f"duplicate key {e.key!r} in one JSON object (JSON keeps only the last)", path=p) from None
    except json.JSONDecodeError as e:
        raise MalformedInput(f"not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})", path=p) from None
    except ValueError as e:  # an integer of more than 4300 digits (Python's int limit)
        raise MalformedInput(f"not a number refc reads ({e})", path=p) from None
    except RecursionError:
        # json.loads recurses once per nesting level; no graph nests this deep
        raise MalformedInput("JSON nested too deeply", path=p) from None
    if _nests_deeper(doc, MAX_NESTING):
        raise MalformedInput(f"JSON nested more than {MAX_NESTING} lists and objects deep", path=p)
    if _ESCAPED_SURROGATE.search(text):
        where = _surrogate_at(doc)
        if where is not None:
            raise MalformedInput("a string holds a lone UTF-16 surrogate (a \\uD800-\\uDFFF escape not in a pair), which is no text", path=p, field=where)
    return doc


def _nests_deeper(doc: Any, bound: int) -> bool:
    """Whether lists and objects in ``doc`` nest more than ``bound`` deep (level by level, not recursing)."""
    level, depth = [doc], 0
    while level:
        depth += 1
        if depth > bound:
            return True
        inner: list[Any] = []
        for v in level:
            if type(v) is dict:
                v = v.values()
            elif type(v) is not list:
                continue
            inner += [x for x in v if type(x) is dict or type(x) is list]
        level = inner
    return False


# A lone surrogate can only come from a \u escape (strict UTF-8 decoding refuses
# one); it is no character, and encoding it (to print it, to write it) raises.
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def _surrogate_at(doc: Any) -> str | None:
    """The JSON path (``nodes[2].name``, ``found_by``) of a key or string in
    ``doc`` with a lone surrogate, or ``None``. Iterative: ``doc`` may nest as
    deep as ``json.loads`` allows."""
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return where or "the document"
        elif isinstance(value, dict):
            for key, item in reversed(value.items()):
                part = key if key.isprintable() else limits.shown(key)
                inner = f"{where}.{part}" if where else part
                if _SURROGATE.search(key):
                    return inner
                stack.append((inner, item))
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item) for i, item in reversed(list(enumerate(value))))
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")


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


def write_atomic(path: str | os.PathLike[str], write: Callable[[BinaryIO], None], *, root: str | os.PathLike[str] | None = None) -> None:
    """Call ``write`` on a temporary file beside ``path`` (created with
    ``O_EXCL``), then rename it into place, so that an interrupted write leaves
    no half-written file.

    Links: a ``path`` the user named may be a link to an existing file or
    device, which is written (the link kept); a dangling link is refused
    (``ELOOP``: refc does not create a link's target). With ``root`` (an
    output directory), neither ``path`` nor a directory between ``root`` and
    it may be a link, so that a link planted inside an output directory is
    never followed. Missing parent directories are created. The file gets the
    permissions a plain ``open`` would give (the umask), not ``mkstemp``'s
    0600. A ``path`` that exists and is not a regular file (``/dev/null``, a
    pipe) is written directly: renaming over it would replace the device, not
    write to it. Raises ``OSError``.
    """
    target = Path(path)
    if root is not None:
        _no_links_below(Path(root), target)
        if target.is_symlink():
            raise OSError(errno.ELOOP, "is a symbolic link inside the output directory (refc does not follow one)", str(path))
    elif target.is_symlink():
        if not target.exists():
            raise OSError(errno.ELOOP, "is a dangling symbolic link (refc does not create its target)", str(path))
        target = Path(os.path.realpath(target))
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


def _no_links_below(root: Path, target: Path) -> None:
    """Raise ``ELOOP`` when a directory strictly between ``root`` and ``target`` is a link."""
    try:
        inner = target.parent.relative_to(root)
    except ValueError:
        raise OSError(errno.EXDEV, f"is not inside {root}", str(target)) from None
    here = root
    for part in inner.parts:
        here = here / part
        if here.is_symlink():
            raise OSError(errno.ELOOP, "is a symbolic link inside the output directory (refc does not follow one)", str(here))


def check_writable_dir(path: str | os.PathLike[str]) -> None:
    """Before any work: ``path`` is (or can be created as) a directory refc can
    write files in. A dangling link, a file, a directory under a file, or one
    on a read-only file system raise ``OSError`` naming the reason."""
    p = Path(path)
    if p.is_symlink() and not p.exists():
        raise OSError(errno.ENOENT, "is a dangling symbolic link", str(path))
    if p.exists() and not p.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "exists and is not a directory", str(path))
    p.mkdir(parents=True, exist_ok=True)
    fd, probe = tempfile.mkstemp(prefix=".refc-probe.", dir=p)
    os.close(fd)
    os.unlink(probe)


def check_writable_file(path: str | os.PathLike[str]) -> None:
    """Before any work: ``write_atomic`` could write ``path`` (see ``check_writable_dir``)."""
    p = Path(path)
    if p.is_symlink():
        if not p.exists():
            raise OSError(errno.ELOOP, "is a dangling symbolic link (refc does not create its target)", str(path))
        p = Path(os.path.realpath(p))
    if p.exists():
        if p.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        if not p.is_file():
            return  # a device or pipe, written directly
    parent = next((q for q in (p.parent, *p.parent.parents) if q.exists()), Path("."))
    if not parent.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, f"{parent} is not a directory", str(path))
    if p.parent.exists():
        check_writable_dir(p.parent)
    elif not os.access(parent, os.W_OK):
        raise PermissionError(errno.EACCES, f"cannot create directories in {parent}", str(path))


@contextlib.contextmanager
def locked_dir(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path/.lock`` for the block; a second holder
    (another campaign into the same directory) gets ``BlockingIOError`` at once."""
    lock = Path(path) / ".lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BlockingIOError(errno.EWOULDBLOCK, "is in use by another refc process (its .lock is held)", str(path)) from None
        yield
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0o022)  # the only way to read it is to set it
    os.umask(mask)
    return mask


def json_bytes(doc: Any) -> bytes:
    """``doc`` as the JSON text refc writes (UTF-8)."""
    return (json.dumps(doc, indent=1) + "\n").encode("utf-8")


def write_json_atomic(path: str | os.PathLike[str], doc: Any, *, root: str | os.PathLike[str] | None = None) -> None:
    """Write ``doc`` as JSON through ``write_atomic``."""
    data = json_bytes(doc)
    write_atomic(path, lambda f: f.write(data), root=root)
