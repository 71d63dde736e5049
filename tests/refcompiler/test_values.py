"""``refcompiler.values``: an ``--inputs`` archive that is no regular file is
malformed at once (a zip is read from its end), never a hang; a member's bad
header is malformed and named, a huge one before it is read; a damaged or
ambiguous archive is malformed; an array in the other byte order binds."""

from __future__ import annotations

import io
import os
import struct
import warnings
import zipfile

import numpy as np
import pytest

from refcompiler.errors import LimitExceeded, MalformedInput
from refcompiler.graph_json import graph_from_doc
from refcompiler.values import bind_inputs, load_npz


@pytest.mark.parametrize("make", ["fifo", "device"])
def test_an_npz_that_is_no_regular_file_is_malformed(tmp_path, make):
    if make == "fifo":
        path = str(tmp_path / "x.npz")
        os.mkfifo(path)  # no writer: opening it for reading would block for ever
    else:
        path = "/dev/zero"
    with pytest.raises(MalformedInput, match="not a regular file"):
        load_npz(path)


def _npz_with_header(path, header: str) -> str:
    """An archive whose one member ``x.npy`` has ``header`` as its .npy header."""
    raw = header.encode("latin1")
    raw += b" " * (64 - (10 + len(raw) + 1) % 64) + b"\n"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("x.npy", np.lib.format.MAGIC_PREFIX + b"\x01\x00" + struct.pack("<H", len(raw)) + raw + bytes(8))
    return str(path)


@pytest.mark.parametrize(
    "header, says",
    [
        ("{'descr': f4, 'fortran_order': False, 'shape': (2,), }", "something other than literals"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': __import__('os'), }", "something other than literals"),
        ("[1, 2]", "not a dictionary"),
        ("{'descr': '<f4', 'shape': (2,), }", "correct keys"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", r"shape \[-1\] has a negative dimension"),
    ],
)
def test_a_bad_npy_header_is_malformed_and_names_the_member(tmp_path, header, says):
    path = _npz_with_header(tmp_path / "bad.npz", header)
    with pytest.raises(MalformedInput, match=says) as e:
        load_npz(path)
    assert str(e.value).startswith(f"{path}: 'x': ") and "<ast." not in str(e.value)


def test_numpys_complaint_quoting_a_long_header_is_cut(tmp_path):
    path = _npz_with_header(tmp_path / "bad.npz", "{'descr': '<f4', 'fortran_order': False, 'shape': (" + "9" * 5000 + ",), }")
    with pytest.raises(MalformedInput, match="header is not readable") as e:
        load_npz(path)
    assert len(str(e.value)) < len(path) + 400 and str(e.value).endswith("...")


def test_an_archive_of_more_members_than_a_graph_has_storage_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("REFC_MAX_NODES", "3")
    path = tmp_path / "many.npz"
    np.savez(path, **{f"a{k}": np.zeros(1, np.float32) for k in range(5)})
    with pytest.raises(LimitExceeded, match=r"many\.npz: members: 5 arrays, more than a graph's storage entries can be \(at most 3, REFC_MAX_NODES\)"):
        load_npz(str(path))


def test_an_input_in_the_other_byte_order_binds_as_the_same_numbers():
    g = graph_from_doc(
        {
            "format": "refc-graph/1",
            "storage": [{"name": "p", "kind": "placeholder", "dtype": "float32", "shape": [3]}],
            "nodes": [],
        }
    )
    swapped = np.array([1.5, -2.0, 3.25], dtype=">f4")
    bound = bind_inputs(g, {"p": swapped})["p"]
    assert bound.dtype == np.dtype("float32") and bound.tolist() == [1.5, -2.0, 3.25]
    with pytest.raises(MalformedInput, match="value is float64"):
        bind_inputs(g, {"p": swapped.astype(">f8")})


def test_a_member_that_is_no_array_is_refused_before_it_is_inflated(tmp_path):
    # np.load reads such a member whole, as bytes: 256 MiB of zeros deflate to
    # 250 KiB, and was decompressed into memory before being refused
    import tracemalloc

    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("w", "w", force_zip64=True) as member:
            for _ in range(16):
                member.write(bytes(16 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(MalformedInput) as e:
            load_npz(str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(e.value) == f"{path}: w: not a .npy array in the archive"
    assert peak < 16 << 20


def test_a_member_name_with_control_characters_is_shown_escaped(tmp_path):
    path = tmp_path / "esc.npz"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("w\x1b[31m", b"text")
    with pytest.raises(MalformedInput) as e:
        load_npz(str(path))
    assert str(e.value) == f"{path}: 'w\\x1b[31m': not a .npy array in the archive"
    g = graph_from_doc({"format": "refc-graph/1", "nodes": [],
                        "storage": [{"name": "p", "kind": "placeholder", "dtype": "float32", "shape": [3]}]})
    with pytest.raises(MalformedInput) as e:
        bind_inputs(g, {"p\x1b[2J": np.zeros(3, np.float32)}, path="i.npz")
    assert "\x1b" not in str(e.value) and str(e.value).startswith("i.npz: 'p\\x1b[2J': 'p\\x1b[2J' names no storage")


def test_a_header_length_past_numpys_bound_is_refused_before_it_is_read(tmp_path):
    # numpy read a stated 1 GiB header whole (2 GB of memory from a 1 MB archive) before its own check
    import tracemalloc

    path = tmp_path / "header.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("A.npy", "w", force_zip64=True) as member:
            member.write(np.lib.format.MAGIC_PREFIX + b"\x02\x00" + struct.pack("<I", 1 << 30))
            for _ in range(4):
                member.write(b" " * (16 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(MalformedInput, match="header says it is 1073741824 bytes long, more than 10000"):
            load_npz(str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


def _archive(path, members: list[str], edit=None) -> str:
    with zipfile.ZipFile(path, "w") as zf:
        for name in members:
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.zeros(2, np.float32))
            zf.writestr(name, buf.getvalue())
    if edit is not None:
        raw = bytearray(path.read_bytes())
        edit(raw, raw.find(b"PK\x03\x04"), raw.find(b"PK\x01\x02"))
        path.write_bytes(bytes(raw))
    return str(path)


def _encrypted(raw: bytearray, local: int, central: int) -> None:
    raw[local + 6] |= 1
    raw[central + 8] |= 1


def _unknown_method(raw: bytearray, local: int, central: int) -> None:
    raw[local + 8] = raw[central + 10] = 99


@pytest.mark.parametrize("members, edit, says", [
    (["A.npy"], _encrypted, "not a readable .npz file .*encrypted"),  # zipfile: RuntimeError (exit 4 before)
    (["A.npy"], _unknown_method, "A: compression method 99; an .npz member is stored or deflated"),  # NotImplementedError
    (["A.npy", "A.npy"], None, "A: two members of the archive have this name"),  # np.load kept one, silently
    (["A.npy", "A"], None, "A: two members of the archive have this name"),
])
def test_a_damaged_or_ambiguous_archive_is_malformed(tmp_path, members, edit, says):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile warns of the duplicate it is told to write
        path = _archive(tmp_path / "x.npz", members, edit)
    with pytest.raises(MalformedInput, match=says):
        load_npz(path)


def _array_bytes() -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.zeros(2, np.float32))
    return buf.getvalue()


@pytest.mark.parametrize("edit, says", [
    (lambda raw, other: raw + b"JUNK", "bytes follow the end of the .npz archive"),
    (lambda raw, other: raw + other, "come before the first member of the .npz archive"),  # the appended one is what zipfile read
    (lambda raw, other: b"PK" + bytes(30) + raw, "32 bytes come before the first member"),
    (lambda raw, other: raw.replace(b"AQB.npy", b"A\0B.npy"), r"'A\\x00B.npy': a member's name holds a NUL character"),  # zipfile read it as A
])
def test_an_archive_that_is_not_the_whole_file_or_names_a_member_ambiguously_is_malformed(tmp_path, edit, says):
    """Each was read without a word: bytes after or before the archive (which
    zipfile skips; another reader may see a second archive there), a member
    name cut at a NUL character."""
    made = []
    for name, member in (("x.npz", "AQB.npy"), ("y.npz", "W.npy")):
        with zipfile.ZipFile(tmp_path / name, "w") as zf:
            zf.writestr(member, _array_bytes())
        made.append((tmp_path / name).read_bytes())
    path = tmp_path / "bad.npz"
    path.write_bytes(edit(*made))
    with pytest.raises(MalformedInput, match=says):
        load_npz(str(path))


def test_a_member_compressed_otherwise_than_numpy_writes_is_refused_by_name(tmp_path):
    path = tmp_path / "lzma.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_LZMA) as zf:
        zf.writestr("A.npy", _array_bytes())
    with pytest.raises(MalformedInput, match=r"lzma\.npz: A: compression method 14; an .npz member is stored or deflated"):
        load_npz(str(path))


def test_what_numpy_and_refc_write_is_read(tmp_path):
    from refcompiler.values import save_npz

    arrays = {"a": np.arange(3, dtype=np.float32), "b": np.ones((2, 2), np.int32)}
    np.savez(tmp_path / "plain.npz", **arrays)
    np.savez_compressed(tmp_path / "deflated.npz", **arrays)
    save_npz(str(tmp_path / "refc.npz"), arrays)
    with zipfile.ZipFile(tmp_path / "comment.npz", "w") as zf:
        zf.writestr("a.npy", _array_bytes())
        zf.comment = b"an archive's comment is part of its end record"
    for name in ("plain", "deflated", "refc"):
        got = load_npz(str(tmp_path / f"{name}.npz"))
        assert got.keys() == arrays.keys() and all(np.array_equal(got[k], arrays[k]) for k in arrays)
    assert list(load_npz(str(tmp_path / "comment.npz"))) == ["a"]
    np.savez(tmp_path / "empty.npz")
    assert load_npz(str(tmp_path / "empty.npz")) == {}  # no values to bind: the graph's own
