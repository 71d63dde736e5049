"""A user's code: load errors are one-line UsageErrors (exit 2), a sys.exit
in it is an ExecutionError, and the current directory never shadows refc."""

from __future__ import annotations

import subprocess

import pytest

from refcompiler.errors import ExecutionError, UsageError
from refcompiler.plugins import call_untrusted, load_attribute

BAD_MODULES = {
    "syntax_bad": ("def f(:\n", "has a syntax error"),
    "exits_bad": ("import sys\nsys.exit(3)\n", "called sys.exit(3) while being imported"),
    "raises_bad": ("raise RuntimeError('boom at import')\n", "raised RuntimeError: boom at import"),
    "imports_bad": ("import no_such_module_anywhere\n", "cannot import module"),
}


@pytest.mark.parametrize("name", sorted(BAD_MODULES))
def test_a_module_that_cannot_be_loaded_is_one_line_of_usage_error(tmp_path, monkeypatch, name):
    source, message = BAD_MODULES[name]
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as e:
        load_attribute(f"{name}:f", "scheduler")
    assert message in str(e.value) and "\n" not in str(e.value) and f"'{name}:f'" in str(e.value)


def test_a_module_in_the_current_directory_is_found_without_staying_on_sys_path(tmp_path, monkeypatch):
    import sys

    (tmp_path / "local_sched_plugin.py").write_text("def s(graph, deps, seed=0):\n    return []\n")
    monkeypatch.chdir(tmp_path)
    assert callable(load_attribute("local_sched_plugin:s", "scheduler"))
    assert str(tmp_path) not in sys.path


def test_sys_exit_in_a_call_is_an_execution_error_naming_it():
    def quits() -> None:
        raise SystemExit(5)

    with pytest.raises(ExecutionError, match="the scheduler mine called sys.exit"):
        call_untrusted(quits, "the scheduler mine")


def test_refc_works_from_a_directory_holding_its_own_module_names(tmp_path):
    for name in ("fuzz", "specs", "refcompiler"):
        (tmp_path / f"{name}.py").write_text("raise SystemExit('a local module shadowed refc')\n")
    (tmp_path / "my_sched.py").write_text(
        "from refcompiler.schedulers import SCHEDULERS\nschedule = SCHEDULERS['topo']\n")
    done = subprocess.run(["refc", "fuzz", "--max-cases", "2", "--workers", "1", "--scheduler", "my_sched:schedule", "--out", "o"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "shadowed" not in done.stderr
