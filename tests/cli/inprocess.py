"""Running ``refc`` in-process for the CLI tests."""

from __future__ import annotations

import pytest

from refc.cli import main


def refc(capsys: pytest.CaptureFixture[str], *argv: object, internal_error: bool = False) -> tuple[int, str, str]:
    """Run ``refc argv`` in this process: (exit code, stdout, stderr). A user's
    mistake never prints a traceback, so none may appear in either stream;
    only a bug in refc itself (``internal_error``, exit 4) shows one."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:  # argparse's own usage errors
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    if not internal_error:
        assert "Traceback" not in out + err
    return code, out, err
