"""Run-time values of module storage: initial values, overrides, ``.npz`` files."""

from __future__ import annotations

import os
import stat
import zipfile
from typing import BinaryIO, Mapping

import numpy as np

from refcompiler import limits
from refcompiler.errors import MalformedInput
from refcompiler.graph import Graph, StorageKind, initial_value
from refcompiler.graph_json import write_atomic

__all__ = ["Values", "initial_values", "constant_values", "bind_inputs", "load_npz", "save_npz", "write_npz", "same_bits", "first_difference"]

Values = dict[str, np.ndarray]


def initial_values(graph: Graph) -> Values:
    """Placeholders and owned variables at their initial values (fresh arrays)."""
    return {s.name: initial_value(s) for s in graph.storage if s.kind is not StorageKind.CONSTANT}


def constant_values(graph: Graph) -> Values:
    return {s.name: initial_value(s) for s in graph.storage_of_kind(StorageKind.CONSTANT)}


def bind_inputs(graph: Graph, overrides: Mapping[str, np.ndarray], *, path: str | None = None) -> Values:
    """Initial values with ``overrides`` applied, each checked against its storage."""
    values = initial_values(graph)
    for name, array in overrides.items():
        s = graph.storage_by_name.get(name)
        if s is None or s.kind is StorageKind.CONSTANT:
            what = "a constant (fixed at compile time)" if s is not None else "no storage"
            raise MalformedInput(f"{limits.shown(name)} names {what}; inputs bind placeholders and owned variables", path=path, field=_field(name))
        array = np.asarray(array)
        wanted = np.dtype(s.dtype.value)
        if array.dtype != wanted and array.dtype.newbyteorder("=") == wanted.newbyteorder("="):
            array = array.astype(wanted)  # the same numbers in the other byte order: exact
        if array.shape != s.shape or array.dtype != wanted:
            raise MalformedInput(
                f"value is {array.dtype.name}{list(array.shape)}, storage '{name}' is {s.dtype.value}{list(s.shape)}",
                path=path,
                field=name,
            )
        values[name] = array.copy()
    return values


def load_npz(path: str) -> dict[str, np.ndarray]:
    """The named arrays of an ``.npz`` archive; anything else is a ``MalformedInput``."""
    try:
        # non-blocking: a named pipe with no writer must not block ``open``
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                # a zip is read from its end: a pipe, a device or a directory is none
                raise MalformedInput("not a regular file (an .npz archive is read from its end, so a pipe or device will not do)", path=path)
            magic = f.read(len(np.lib.format.MAGIC_PREFIX))
    except FileNotFoundError:
        raise MalformedInput("no such file", path=path) from None
    except OSError as e:
        raise MalformedInput(f"cannot read: {e.strerror or e}", path=path) from None
    if magic == np.lib.format.MAGIC_PREFIX:
        # np.load would give a bare array: it has no names to bind by
        raise MalformedInput("a single .npy array, not an .npz archive of named arrays", path=path)
    if not magic.startswith(b"PK"):
        # else np.load tries it as a pickle, and says so
        raise MalformedInput("not an .npz archive (a zip of NAME.npy arrays, as numpy.savez writes)", path=path)
    try:
        _check_headers(path)
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, RuntimeError, NotImplementedError) as e:
        # (zipfile: RuntimeError for an encrypted member, NotImplementedError for an unknown compression)
        raise MalformedInput(f"not a readable .npz file ({limits.clipped(str(e), 200)})", path=path) from None
    return arrays


def _check_headers(path: str) -> None:
    """Each member's ``.npy`` header (shape, dtype) against the limits, before
    any member is decompressed beyond its header: a small archive may inflate
    to gigabytes. A member that is no ``.npy`` array is refused by name (np.load
    would hand back its bytes, all of them). Raises ``LimitExceeded``, ``MalformedInput`` or what
    ``zipfile``/``numpy`` raise on a broken archive."""
    total = 0
    with zipfile.ZipFile(path) as zf:
        _check_whole(path, zf)
        members = zf.infolist()
        bound = limits.value("nodes")
        if len(members) > bound:  # each member is a storage entry's value: no graph has more
            raise limits.LimitExceeded(f"members: {len(members)} arrays, more than a graph's storage entries can be "
                                       f"(at most {bound}, {limits.LIMITS['nodes'].env})", path=path)
        seen: set[str] = set()
        for info in members:
            _check_member(path, info)
            key = info.filename.removesuffix(".npy")
            if key in seen:  # np.load would keep one of them, silently
                raise MalformedInput("two members of the archive have this name", path=path, field=_field(key))
            seen.add(key)
            with zf.open(info) as member:
                if member.read(len(np.lib.format.MAGIC_PREFIX)) != np.lib.format.MAGIC_PREFIX:
                    # np.load would read such a member whole, as bytes: a small archive may
                    # inflate to gigabytes, so it is refused from its first bytes
                    raise MalformedInput("not a .npy array in the archive", path=path, field=_field(info.filename.removesuffix(".npy")))
                member.seek(0)
                version = np.lib.format.read_magic(member)
                read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                name = limits.shown(info.filename.removesuffix(".npy"))
                length = _header_length(member.read(2 if version == (1, 0) else 4))
                if length > MAX_HEADER:  # numpy reads a header whole before it checks its size
                    raise MalformedInput(f"its .npy header says it is {length} bytes long, more than {MAX_HEADER}", path=path, field=name)
                member.seek(0)
                np.lib.format.read_magic(member)
                try:
                    shape, _, dtype = read(member, max_header_size=MAX_HEADER)
                except ValueError as e:
                    raise MalformedInput(f"its .npy header is not readable: {_header_problem(e)}", path=path, field=name) from None
            if dtype.hasobject or dtype.kind not in "biuf":
                raise MalformedInput(f"dtype {dtype} is not a number type", path=path, field=name)
            if any(d < 0 for d in shape):
                raise MalformedInput(f"shape {list(shape)} has a negative dimension", path=path, field=name)
            if len(shape) > limits.MAX_RANK:
                raise MalformedInput(f"rank {len(shape)} is above {limits.MAX_RANK}", path=path, field=name)
            count = int(np.prod(shape, dtype=object)) if shape else 1
            limits.check("elements", count, name, path=path)
            total += count * dtype.itemsize
            limits.check("file_bytes", total, f"{name} (decompressed)", path=path)


MAX_HEADER = 10_000  # bytes of a member's .npy header (numpy's own default bound)

_END_RECORD = b"PK\x05\x06"  # a zip's end of central directory record
_END_RECORD_BYTES = 22  # its length without the archive's comment
# how numpy writes a member (np.savez, np.savez_compressed); zipfile would also
# decompress bzip2 and LZMA, whose decoders take memory a header asks for
_COMPRESSIONS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}


def _check_whole(path: str, zf: zipfile.ZipFile) -> None:
    """The archive is the whole file: no bytes after its end record (a second
    archive appended there is what another reader may see) and none before its
    first member (``zipfile`` skips both)."""
    with open(path, "rb") as f:
        end = os.fstat(f.fileno()).st_size - _END_RECORD_BYTES - len(zf.comment)
        f.seek(max(end, 0))
        record = f.read(len(_END_RECORD))
    if end < 0 or record != _END_RECORD:
        raise MalformedInput("bytes follow the end of the .npz archive (a zip whose end record is not at the end of the file)", path=path)
    first = min((info.header_offset for info in zf.infolist()), default=0)
    if first != 0:
        raise MalformedInput(f"{first} bytes come before the first member of the .npz archive (another archive, or data put in front)", path=path)


def _check_member(path: str, info: zipfile.ZipInfo) -> None:
    """A member's name and compression, before anything of it is read."""
    if info.orig_filename != info.filename:  # zipfile cuts a name at a NUL character
        raise MalformedInput("a member's name holds a NUL character", path=path, field=_field(info.orig_filename))
    if info.compress_type not in _COMPRESSIONS:
        raise MalformedInput(f"compression method {info.compress_type}; an .npz member is stored or deflated, as numpy writes it",
                             path=path, field=_field(info.filename.removesuffix(".npy")))


def _header_length(field: bytes) -> int:
    """The header length a ``.npy`` file states after its magic and version
    (two bytes in version 1.0, four after); a short field is a broken header, 0."""
    return int.from_bytes(field, "little") if len(field) in (2, 4) else 0


def _field(name: str) -> str:
    """A member or storage name for a message: as it is when it is a short
    printable ASCII line, else escaped (``limits.shown``), never printed raw."""
    return name if name.isascii() and name.isprintable() and len(name) <= 128 else limits.shown(name)


HEADER_SHOWN = 300  # characters of numpy's complaint about a header (which quotes the header)


def _header_problem(e: ValueError) -> str:
    """numpy's complaint about a ``.npy`` header, without the parser's object
    reprs it shows for a header that is not made of literals."""
    text = str(e)
    if "<ast." in text:
        return "it holds something other than literals (a dictionary of 'descr', 'fortran_order' and 'shape')"
    return limits.clipped(text, HEADER_SHOWN)


def save_npz(path: str, values: Mapping[str, np.ndarray]) -> None:
    """Write ``values`` to ``path`` through a temporary file and a rename (``write_atomic``)."""
    write_atomic(path, lambda f: write_npz(f, values))


def write_npz(f: BinaryIO, values: Mapping[str, np.ndarray]) -> None:
    """``values`` as an ``.npz`` on the open binary stream ``f`` (a pipe too)."""
    # Written entry by entry rather than with np.savez(f, **values): a storage
    # may be called "file" or "allow_pickle", which np.savez takes as its own
    # keywords. The result is what np.savez writes: an uncompressed zip of
    # NAME.npy members, which np.load reads.
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as zf:
        for name, array in values.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-exact equality: same dtype, shape and bytes (NaNs compare by payload)."""
    return a.dtype == b.dtype and a.shape == b.shape and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def first_difference(got: np.ndarray, want: np.ndarray) -> str:
    """Where two arrays first differ bit-wise, and the two values there."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"got {got.dtype}{list(got.shape)}, want {want.dtype}{list(want.shape)}"
    g = np.ascontiguousarray(got).reshape(-1).view(np.uint8).reshape(got.size, -1)
    w = np.ascontiguousarray(want).reshape(-1).view(np.uint8).reshape(want.size, -1)
    flat = int(np.flatnonzero((g != w).any(axis=1))[0])
    index = tuple(int(i) for i in np.unravel_index(flat, got.shape))
    a, b = _value(got.reshape(-1)[flat]), _value(want.reshape(-1)[flat])
    if a == b:  # same printed value, different bits (NaN payloads): show the bits
        a, b = f"{a} (bits {g[flat][::-1].tobytes().hex()})", f"{b} (bits {w[flat][::-1].tobytes().hex()})"
    return f"at {list(index)} got {a}, want {b}"


def _value(x: np.generic) -> str:
    """A scalar as a person writes it (``0.5``, not ``np.float32(0.5)``)."""
    return str(x.item()) if x.dtype.kind in "biu" else str(x)
