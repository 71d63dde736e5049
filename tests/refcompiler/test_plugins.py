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


def test_os_exit_in_a_call_is_an_execution_error_and_refc_goes_on():
    import os

    with pytest.raises(ExecutionError, match=r"pass mine called os._exit\(3\)"):
        call_untrusted(lambda: os._exit(3), "pass mine")
    assert os._exit.__name__ == "_exit"  # the real one is back


def test_any_exception_in_a_call_is_an_execution_error_even_one_that_cannot_be_printed():
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no message")

    def base() -> None:
        raise BaseException("not an Exception")

    def unprintable() -> None:
        raise Unprintable()

    with pytest.raises(ExecutionError, match="raised BaseException: not an Exception"):
        call_untrusted(base, "the scheduler mine")
    with pytest.raises(ExecutionError, match=r"raised Unprintable: \(its message could not be read\)"):
        call_untrusted(unprintable, "the scheduler mine")


    def generator_exit() -> None:  # raised by the code itself: no generator of refc's is being closed
        raise GeneratorExit("planted")

    with pytest.raises(ExecutionError, match="raised GeneratorExit: planted"):
        call_untrusted(generator_exit, "the scheduler mine")


def test_what_a_call_prints_goes_to_stderr_not_to_refcs_stdout(capsys):
    assert call_untrusted(lambda: print("chatty") or 7, "pass mine") == 7
    out, err = capsys.readouterr()
    assert out == "" and "chatty" in err


def test_a_module_that_raises_a_base_exception_or_os_exit_on_import_is_a_usage_error(tmp_path, monkeypatch):
    (tmp_path / "base_bad.py").write_text("raise BaseException('odd')\n")
    (tmp_path / "osexit_bad.py").write_text("import os\nos._exit(3)\n")
    (tmp_path / "getattr_bad.py").write_text("def __getattr__(name):\n    raise RuntimeError('lazy')\n")
    monkeypatch.chdir(tmp_path)
    for spec, message in (("base_bad:f", "raised BaseException: odd"), ("osexit_bad:f", "called os._exit(3)"),
                          ("getattr_bad:f", "looking up 'f' raised RuntimeError: lazy")):
        with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
            load_attribute(spec, "scheduler")


def test_a_deadline_of_refcs_own_during_an_import_passes_through(tmp_path, monkeypatch):
    from fuzz.time_limit import CaseTimeout

    (tmp_path / "slow_import_bad.py").write_text("from fuzz.time_limit import CaseTimeout\nraise CaseTimeout(1.0)\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CaseTimeout):
        load_attribute("slow_import_bad:f", "scheduler")


def test_a_keyboard_interrupt_the_code_raises_itself_is_an_execution_error():
    def interrupts() -> None:
        raise KeyboardInterrupt

    with pytest.raises(ExecutionError, match=r"^the scheduler mine raised KeyboardInterrupt$"):
        call_untrusted(interrupts, "the scheduler mine")


def test_a_real_signal_during_a_call_still_interrupts_and_the_handler_is_restored():
    import os
    import signal

    before = signal.getsignal(signal.SIGINT)

    def signalled() -> None:
        os.kill(os.getpid(), signal.SIGINT)  # the default handler raises KeyboardInterrupt here
        signal.pthread_sigmask(signal.SIG_BLOCK, [])  # a bytecode boundary: the handler runs by now

    with pytest.raises(KeyboardInterrupt):
        call_untrusted(signalled, "the scheduler mine")
    assert signal.getsignal(signal.SIGINT) is before


def test_in_another_thread_a_keyboard_interrupt_is_always_the_codes_own():
    import threading

    def interrupts() -> None:
        raise KeyboardInterrupt("from a worker thread")

    caught: list[BaseException] = []

    def run() -> None:
        try:
            call_untrusted(interrupts, "pass mine")
        except BaseException as e:  # noqa: BLE001 - the test looks at what came out
            caught.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert isinstance(caught[0], ExecutionError) and "pass mine raised KeyboardInterrupt: from a worker thread" in str(caught[0])


def test_a_block_of_calls_guards_each_call_and_sets_the_guards_up_once(monkeypatch, capsys):
    import os
    import signal
    import sys

    from refcompiler.plugins import untrusted_calls

    swaps: list[int] = []
    real_signal = signal.signal
    monkeypatch.setattr(signal, "signal", lambda sig, handler: swaps.append(sig) or real_signal(sig, handler))
    real_exit, before = os._exit, signal.getsignal(signal.SIGINT)
    results = []
    with untrusted_calls("the scheduler mine") as call:
        for k in range(50):
            results.append(call(lambda k: print(f"chatty {k}") or k, k))
        with pytest.raises(ExecutionError, match=r"^the scheduler mine called os._exit\(3\)$"):
            call(lambda: os._exit(3))
        with pytest.raises(ExecutionError, match=r"^the scheduler mine raised ValueError: no \(at tests/refcompiler/test_plugins.py:\d+ in <genexpr>, called from .* in <lambda>\)$"):
            call(lambda: (_ for _ in ()).throw(ValueError("no")))
        with pytest.raises(ExecutionError, match=r"^the scheduler mine called sys.exit\(2\)$"):
            call(sys.exit, 2)
        assert call(lambda: "still usable") == "still usable"
    assert results == list(range(50))
    assert len(swaps) <= 4  # SIGINT and SIGTERM wrapped once and restored once, not at each call
    assert os._exit is real_exit and signal.getsignal(signal.SIGINT) is before
    out, err = capsys.readouterr()
    assert out == "" and "chatty 49" in err


def test_a_failing_call_names_the_component_it_blames():
    def mine(*args):
        raise RuntimeError("boom")

    def exits(*args):
        raise SystemExit(1)

    for fn in (mine, exits):
        with pytest.raises(ExecutionError) as e:
            call_untrusted(fn, "pass mine", 1, blame="mine")
        assert e.value.component == "mine"
    with pytest.raises(ExecutionError) as e:
        call_untrusted(mine, "the scheduler mine")
    assert e.value.component == ""


USER_PASS = """\
import numpy as np


def helper(program, table):
    return table[program.name]


def lookup(program):
    return helper(program, {})


def uses_numpy(program):
    return np.reshape(np.zeros(3), (2, 2))


def misuses_refc(program):
    return program.with_instrs(None)


def raises_on_import():
    raise RuntimeError("boom")


value = raises_on_import() if __name__ == "where_bad" else None
"""


def test_a_failing_call_says_where_in_the_users_code(tmp_path, monkeypatch):
    """The innermost frames of the user's own file, innermost first, never
    refc's; a library the code called (numpy) is skipped for the user's line
    that called it; the path is relative to the current directory."""
    (tmp_path / "where_pass.py").write_text(USER_PASS)
    monkeypatch.chdir(tmp_path)
    program = type("P", (), {"name": "prog", "with_instrs": lambda self, x: len(x)})()
    said = {}
    for name in ("lookup", "uses_numpy", "misuses_refc"):
        with pytest.raises(ExecutionError) as e:
            call_untrusted(load_attribute(f"where_pass:{name}", "pass"), f"pass {name}", program)
        said[name] = str(e.value)
    assert said["lookup"].endswith("raised KeyError: 'prog' (at where_pass.py:5 in helper, called from where_pass.py:9 in lookup)")
    assert said["uses_numpy"].endswith("(at where_pass.py:13 in uses_numpy)"), said["uses_numpy"]
    assert "in misuses_refc)" in said["misuses_refc"]  # the lambda here is the test's own frame: shown too
    (tmp_path / "where_bad.py").write_text(USER_PASS)
    with pytest.raises(UsageError, match=r"raised RuntimeError: boom \(at where_bad.py:21 in raises_on_import, called from where_bad.py:24 in <module>\)"):
        load_attribute("where_bad:lookup", "pass")


def test_refcs_own_frames_are_never_shown_as_the_users():
    from refcompiler.ir import Program

    def bad_pass(program: Program) -> Program:
        return program.with_instrs(7)  # raises inside refcompiler/ir.py

    with pytest.raises(ExecutionError) as e:
        call_untrusted(bad_pass, "pass bad", Program("p", (), ()))
    assert "ir.py" not in str(e.value) and str(e.value).endswith("test_plugins.py:250 in bad_pass)".replace("250", str(bad_pass.__code__.co_firstlineno + 1)))
