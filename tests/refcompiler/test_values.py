"""``refcompiler.values``: an ``--inputs`` archive that is no regular file is
malformed at once (a zip is read from its end), never a hang."""

from __future__ import annotations

import os

import pytest

from refcompiler.errors import MalformedInput
from refcompiler.values import load_npz


@pytest.mark.parametrize("make", ["fifo", "device"])
def test_an_npz_that_is_no_regular_file_is_malformed(tmp_path, make):
    if make == "fifo":
        path = str(tmp_path / "x.npz")
        os.mkfifo(path)  # no writer: opening it for reading would block for ever
    else:
        path = "/dev/zero"
    with pytest.raises(MalformedInput, match="not a regular file"):
        load_npz(path)
