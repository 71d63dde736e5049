"""``refcompiler.files``: writing never through a link planted in an output
directory, output places checked before any work, the output directory lock."""

from __future__ import annotations

import errno

import pytest

from refcompiler.errors import MalformedInput
from refcompiler.files import check_writable_dir, check_writable_file, locked_dir, read_json, write_atomic


def _write(text: str):
    return lambda f: f.write(text.encode())


def test_a_link_planted_as_a_file_inside_an_out_directory_is_not_followed(tmp_path):
    out, victim = tmp_path / "out", tmp_path / "victim.txt"
    out.mkdir()
    victim.write_text("precious")
    (out / "summary.json").symlink_to(victim)
    with pytest.raises(OSError) as info:
        write_atomic(out / "summary.json", _write("x"), root=out)
    assert info.value.errno == errno.ELOOP
    assert victim.read_text() == "precious" and (out / "summary.json").is_symlink()


def test_a_link_planted_as_a_directory_inside_an_out_directory_is_not_followed(tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "cases").symlink_to(elsewhere)
    with pytest.raises(OSError, match="symbolic link inside the output directory"):
        write_atomic(out / "cases" / "c.json", _write("x"), root=out)
    assert list(elsewhere.iterdir()) == []


def test_the_out_directory_itself_may_be_a_link_the_user_named(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "out").symlink_to(real)
    write_atomic(tmp_path / "out" / "cases" / "c.json", _write("x"), root=tmp_path / "out")
    assert (real / "cases" / "c.json").read_text() == "x"


def test_a_dangling_link_is_refused_and_its_target_not_created(tmp_path):
    link = tmp_path / "out.npz"
    link.symlink_to(tmp_path / "nowhere" / "t.npz")
    with pytest.raises(OSError, match="dangling"):
        write_atomic(link, _write("x"))
    with pytest.raises(OSError, match="dangling"):
        check_writable_file(link)
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("make", ["file", "under_file", "dangling", "unwritable"])
def test_an_out_directory_that_cannot_be_written_is_refused(tmp_path, make):
    blocker = tmp_path / "file"
    blocker.write_text("")
    path = {
        "file": blocker,
        "under_file": blocker / "out",
        "dangling": tmp_path / "link",
        "unwritable": "/proc/sys/refc-out",  # proc: nothing can be created here, even as root
    }[make]
    if make == "dangling":
        path.symlink_to(tmp_path / "missing")
    with pytest.raises(OSError):
        check_writable_dir(path)
    assert not (tmp_path / "missing").exists()


def test_a_second_holder_of_the_out_directory_lock_is_refused(tmp_path):
    with locked_dir(tmp_path):
        with pytest.raises(BlockingIOError, match="in use by another refc process"):
            with locked_dir(tmp_path):
                pass
    with locked_dir(tmp_path):  # released
        pass


def test_the_lock_file_is_not_a_planted_link(tmp_path):
    (tmp_path / ".lock").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        with locked_dir(tmp_path):
            pass
    assert not (tmp_path / "elsewhere").exists()


def test_a_named_pipe_no_one_writes_to_is_malformed_after_a_bounded_wait(tmp_path, monkeypatch):
    import os
    import time

    from refcompiler import files
    from refcompiler.errors import MalformedInput

    fifo = tmp_path / "g.json"
    os.mkfifo(fifo)
    monkeypatch.setattr(files, "FIFO_SECONDS", 0.5)
    start = time.monotonic()
    with pytest.raises(MalformedInput, match="g.json: a named pipe no one wrote to within"):
        files.read_json(fifo)
    assert time.monotonic() - start < 10


def test_a_named_pipe_with_a_writer_is_read(tmp_path):
    import os
    import threading

    from refcompiler.files import read_json

    fifo = tmp_path / "g.json"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text('{"a": 1}'))
    writer.start()
    assert read_json(fifo) == {"a": 1}
    writer.join()


def test_a_directory_or_an_endless_device_is_malformed_not_a_hang(tmp_path):
    from refcompiler.errors import LimitExceeded, MalformedInput
    from refcompiler.files import read_bounded

    with pytest.raises(MalformedInput, match="cannot read: Is a directory"):
        read_bounded(tmp_path)
    with pytest.raises(LimitExceeded, match="REFC_MAX_FILE_BYTES"):
        read_bounded("/dev/zero")


@pytest.mark.parametrize(
    "text, field",
    [
        ('{"format": "refc-graph/1", "nodes": [], "found_by": "a\\ud800b"}', "found_by"),
        ('{"format": "refc-graph/1", "nodes": [], "schedule": ["ok", "\\uDFFF"]}', "schedule[1]"),
        ('{"format": "refc-graph/1", "nodes": [], "inputs": {"\\ud800": {"seed": 1}}}', "inputs.'\\ud800'"),
    ],
)
def test_a_lone_surrogate_in_a_json_string_is_malformed_and_located(tmp_path, text, field):
    # json.loads accepts "\ud800"; printing or writing such a string raised
    # UnicodeEncodeError (refc show --format dot: exit 4)
    path = tmp_path / "g.json"
    path.write_text(text)
    with pytest.raises(MalformedInput) as e:
        read_json(path)
    assert str(e.value).startswith(f"{path}: {field}: a string holds a lone UTF-16 surrogate")


def test_a_surrogate_pair_is_one_character_and_reads(tmp_path):
    path = tmp_path / "g.json"
    path.write_text('{"found_by": "\\ud83d\\ude00 \\\\ud800"}')
    assert read_json(path) == {"found_by": "\U0001F600 \\ud800"}


def test_a_byte_order_mark_at_the_start_is_read_past_and_nowhere_else(tmp_path):
    path = tmp_path / "g.json"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"a": 1}')
    assert read_json(path) == {"a": 1}
    path.write_bytes(b'{"a": 1}\xef\xbb\xbf')  # inside the text it is a character, and no JSON
    with pytest.raises(MalformedInput, match="not valid JSON"):
        read_json(path)
