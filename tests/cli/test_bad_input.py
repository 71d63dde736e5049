"""A second reader's cases: user mistakes that once slipped past, each with its exit code.

In-process (``refc.cli.main``) and fast; each case was a silent
acceptance, a misleading message, a traceback or a clobbered file before.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.cli.inprocess import refc

ROOT = Path(__file__).resolve().parents[2]
SGD = ROOT / "examples" / "sgd_momentum.json"
READ_THEN_SAVE = ROOT / "examples" / "read_then_save.json"




def graph_with_value(tmp_path: Path, value_text: str) -> Path:
    """A one-node graph whose placeholder's init value is ``value_text``, verbatim JSON."""
    path = tmp_path / "g.json"
    path.write_text(
        '{"format": "refc-graph/1", "nodes": [{"name": "r", "op": "relu", "inputs": ["x"]}], "storage": '
        '[{"name": "x", "kind": "placeholder", "dtype": "float32", "shape": [2], "init": {"value": %s}}]}' % value_text
    )
    return path


# ------------------------------------------------------------ graph files


@pytest.mark.parametrize("value", ["[NaN, 1]", "[Infinity, 1]", "[-Infinity, 1]", "[1e400, 1]", "[1e39, 1]"])
def test_a_float32_init_value_must_be_finite(capsys, tmp_path, value):
    path = graph_with_value(tmp_path, value)
    code, out, err = refc(capsys, "check", path)
    assert code == 2
    assert err.startswith(f"refc check: {path}: storage[0] ('x').init.value[0]: ") and "not a finite float32" in err


def test_the_largest_float32_is_a_valid_init_value(capsys, tmp_path):
    path = graph_with_value(tmp_path, "[3.4028235e38, -3.4028235e38]")
    assert refc(capsys, "check", path)[0] == 0


def test_a_duplicate_key_is_malformed_not_silently_dropped(capsys, tmp_path):
    path = tmp_path / "g.json"
    # the first "nodes" would be dropped by json.loads, and the graph checked as empty
    path.write_text('{"format": "refc-graph/1", "nodes": [{"name": "r", "op": "relu", "inputs": ["nowhere"]}], "nodes": []}')
    code, out, err = refc(capsys, "check", path)
    assert code == 2 and err == f"refc check: {path}: duplicate key 'nodes' in one JSON object (JSON keeps only the last)\n"


@pytest.mark.parametrize("argv", [["check", ""], ["run", str(SGD), "--out", ""], ["run", str(SGD), "--inputs", ""]])
def test_an_empty_file_name_is_bad_usage(capsys, argv):
    code, out, err = refc(capsys, *argv)
    assert code == 2 and "expected a file name, got an empty string" in err and out == ""


@pytest.mark.parametrize("argv", [["show"], ["show", "--format", "dot"], ["compile", "--format", "dot"], ["prove", "--format", "dot"]])
def test_a_file_name_that_is_not_utf8_or_has_an_escape_is_no_traceback(capsys, tmp_path, argv):
    # the graph's default name is the file's stem: "g\udcff" could not be encoded (exit 4)
    doc = json.loads(READ_THEN_SAVE.read_text())
    doc.pop("name", None)
    path = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"g\xff\x1b[31m.json"))
    Path(path).write_text(json.dumps(doc))
    code, out, err = refc(capsys, argv[0], path, *argv[1:])
    assert code == 0, err
    assert "\x1b" not in out.replace(path, "")


@pytest.mark.parametrize("argv", [
    ["replay", str(ROOT / "corpus"), "--plugin-timeout", "1e7"],
    ["fuzz", "--case-seconds", "1e12", "--max-cases", "1"],
    ["fuzz", "--budget", "1e300"],
    ["prove", str(SGD), "--timeout", "3e6"],
])
def test_a_time_limit_past_what_the_timers_hold_is_bad_usage(capsys, argv):
    # --plugin-timeout 1e7 raised OverflowError in poll() (exit 4); --case-seconds 1e12
    # failed every fuzz chunk "outside the oracle"
    code, out, err = refc(capsys, *argv)
    assert (code, out) == (2, "") and "needs at most 2147483 seconds (about 24 days)" in err


@pytest.mark.parametrize("argv, message", [
    (["mutants", "--score", "--seeds", "5000"], "argument --seeds: needs at most 1000, got 5000"),
    (["bench", "--fuzz", "--fuzz-rounds", "1000"], "argument --fuzz-rounds: needs at most 100, got 1000"),
    (["bench", "--compile", "--compile-repeat", "101"], "argument --compile-repeat: needs at most 100, got 101"),
    (["bench", "--target", "--target-graphs", "10000000"], "argument --target-graphs: needs at most 100000, got 10000000"),
    (["fuzz", "--max-nodes", "1000000000000", "--max-cases", "1"],
     "--max-nodes: needs 1000000000000 nodes and storage entries in one graph file, more than the limit 100000 (REFC_MAX_NODES)"),
])
def test_a_count_of_repetitions_or_a_graph_size_past_its_bound_is_bad_usage(capsys, argv, message):
    # each ran on for days (a campaign of --max-nodes 10**12 promised graphs no refc command reads)
    code, out, err = refc(capsys, *argv)
    assert (code, out) == (2, "") and message in err.strip().splitlines()[-1]  # argparse: its usage, then the error


@pytest.mark.parametrize("argv", [
    ["run", str(SGD), "--runs", "1_0"],  # int() reads 10
    ["run", str(SGD), "--runs", " 3 "],
    ["run", str(SGD), "--runs", "\u0663"],  # ARABIC-INDIC DIGIT THREE: int() reads 3
    ["bench", "--proofs", "--sizes", "1_0"],
    ["bench", "--validate", "--validate-sizes", "1_0x8"],
    ["import", str(ROOT / "examples" / "onnx" / "mlp.onnx"), "--dim", "batch=\u0663"],
    ["import", str(ROOT / "examples" / "onnx" / "mlp.onnx"), "--dim", "batch=\u00b2"],  # isdigit() but not int(): 'invalid _dim value'
    ["import", str(ROOT / "examples" / "onnx" / "mlp.onnx"), "--dim", "batch=" + "9" * 5000],  # past int()'s digits: the same
    ["import", str(ROOT / "examples" / "onnx" / "mlp.onnx"), "--dim", "batch=2147483648"],
])
def test_a_number_option_takes_ascii_digits_only(capsys, argv):
    code, out, err = refc(capsys, *argv)
    last = err.strip().splitlines()[-1]
    assert (code, out) == (2, "") and last.startswith("refc: error: argument ")
    assert "invalid" not in last and len(last) < 200


def test_a_shrink_grace_of_zero_is_no_grace_and_a_negative_one_bad_usage(capsys, tmp_path):
    # 0 (shrink only within the budget) was refused as "above 0"
    code, out, err = refc(capsys, "fuzz", "--budget", "1", "--max-cases", "2", "--shrink-grace", "0", "--out", str(tmp_path / "o"))
    assert code == 0, err
    code, out, err = refc(capsys, "fuzz", "--budget", "1", "--shrink-grace", "-1")
    assert (code, out) == (2, "") and "needs a finite number of seconds of 0 or more, got -1" in err


def test_run_config_without_target_is_bad_usage(capsys):
    # it was ignored: the graph ran compiled, exit 0, as if no configuration were asked for
    code, out, err = refc(capsys, "run", SGD, "--config", "ORT_DISABLE_ALL")
    assert (code, out) == (2, "") and err == "refc run: --config 'ORT_DISABLE_ALL' chooses a configuration of an external compiler: it needs --target NAME, or a case found against one\n"


def test_a_file_name_that_is_not_utf8_prints_under_a_strict_stdout(tmp_path):
    # a UTF-8 locale's stdout is strict: printing "g\udcff.json" raised UnicodeEncodeError (exit 4)
    import subprocess

    path = os.path.join(os.fsencode(tmp_path), b"g\xff.json")
    with open(path, "wb") as f:
        f.write(SGD.read_bytes())
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "refc", "check", path], capture_output=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert done.stdout == path + b": ok (11 nodes, 5 storage)\n"


# ------------------------------------------------------------ --inputs


def test_inputs_that_are_text_are_not_called_pickled_data(capsys, tmp_path):
    text = tmp_path / "t.npz"
    text.write_text("w,1,2\n")
    code, out, err = refc(capsys, "run", SGD, "--reference", "--inputs", text)
    assert code == 2
    assert err == f"refc run: {text}: not an .npz archive (a zip of NAME.npy arrays, as numpy.savez writes)\n"


def test_inputs_member_that_is_no_npy_array_is_named(capsys, tmp_path):
    import zipfile

    path = tmp_path / "i.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("w.npy", b"garbage")
    code, out, err = refc(capsys, "run", SGD, "--reference", "--inputs", path)
    assert (code, err) == (2, f"refc run: {path}: w: not a .npy array in the archive\n")


# ------------------------------------------------------------ --out


def test_out_through_a_symlink_writes_the_file_and_keeps_the_link(capsys, tmp_path):
    real, link = tmp_path / "real.npz", tmp_path / "link.npz"
    real.write_text("old")
    link.symlink_to(real)
    assert refc(capsys, "run", SGD, "--reference", "--out", link)[0] == 0
    assert link.is_symlink()
    assert sorted(np.load(real).files) == ["loss", "v", "w", "x"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_out_to_a_pipe_writes_into_it_rather_than_replacing_it(capsys, tmp_path):
    # like --out /dev/null or /dev/stdout: renaming a temporary file over a
    # device replaces the device (as root, /dev/null became a regular file)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so that refc's open does not block
    try:
        code, out, err = refc(capsys, "run", SGD, "--reference", "--out", fifo)
        assert code == 0 and stat.S_ISFIFO(fifo.stat().st_mode)
        assert os.read(reader, 1 << 16).startswith(b"PK")
    finally:
        os.close(reader)


def test_out_gets_the_umask_permissions_not_0600(capsys, tmp_path):
    old = os.umask(0o022)
    try:
        assert refc(capsys, "run", SGD, "--reference", "--out", tmp_path / "o.npz")[0] == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "o.npz").stat().st_mode) == 0o644


def test_out_below_a_file_says_which_is_not_a_directory(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, out, err = refc(capsys, "run", SGD, "--reference", "--out", blocker / "x.npz")
    assert code == 2 and err == f"refc run: cannot write {blocker / 'x.npz'}: {blocker} is not a directory\n"


def test_an_interrupted_out_leaves_neither_the_file_nor_a_temporary(capsys, tmp_path, monkeypatch):
    write_array = np.lib.format.write_array
    calls = []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return write_array(*args, **kwargs)

    monkeypatch.setattr(np.lib.format, "write_array", interrupted)
    code, out, err = refc(capsys, "run", SGD, "--reference", "--out", tmp_path / "o.npz")
    assert code == 130 and list(tmp_path.iterdir()) == []


# ------------------------------------------------------------ prove, plug-ins


def test_prove_rejects_an_unknown_pipeline_before_proving(capsys):
    # before: exit 1 with "run under pipeline O3: not run", or 0 when proved
    for graph, extra in ((READ_THEN_SAVE, ["--mutant", "sched-drop-save-war"]), (SGD, [])):
        code, out, err = refc(capsys, "prove", graph, "--pipeline", "O3", *extra)
        assert (code, out) == (2, "") and err.startswith("refc prove: unknown pass 'O3'")


@pytest.mark.parametrize("flag, value, message", [
    ("--scheduler", "foo", "unknown scheduler 'foo'"),
    ("--pipeline", "O3", "unknown pass 'O3'"),
])
def test_run_reference_rejects_an_unknown_scheduler_or_pipeline(capsys, flag, value, message):
    # --reference does not use them, but a misspelt name is still bad usage
    code, out, err = refc(capsys, "run", SGD, "--reference", flag, value)
    assert (code, out) == (2, "") and err.startswith(f"refc run: {message}")


def test_an_invariant_broken_while_compiling_names_the_file(capsys, tmp_path):
    # refc check, run and prove name the file on every violation; compile did not
    bad = tmp_path / "two_saves.json"
    bad.write_text(
        '{"format": "refc-graph/1", "storage": [{"name": "A", "kind": "placeholder", "dtype": "float32", "shape": [2]}],'
        ' "nodes": [{"name": "s1", "op": "save", "inputs": ["A"], "attrs": {"target": "A"}},'
        ' {"name": "s2", "op": "save", "inputs": ["A"], "attrs": {"target": "A"}}]}'
    )
    code, out, err = refc(capsys, "compile", bad)
    assert (code, out) == (1, "") and err.startswith(f"refc compile: {bad}: OWN-4: ")
    code, out, err = refc(capsys, "run", READ_THEN_SAVE, "--mutant", "hoist-dealloc-early", "--pipeline", "O2")
    assert (code, out) == (1, "") and err.startswith(f"refc run: {READ_THEN_SAVE}: after pass hoist_dealloc: IR-1: ")


def test_the_refc_script_finds_a_scheduler_module_in_the_current_directory(capsys, tmp_path, monkeypatch):
    # The console script does not put the current directory on sys.path;
    # ``python3 -m refcompiler`` does. Both must find ./my_sched.py.
    name = "refc_test_cwd_scheduler"
    (tmp_path / f"{name}.py").write_text(
        "from refcompiler.schedulers import SCHEDULERS\n"
        "def mine(graph, deps, seed):\n"
        "    return SCHEDULERS['topo'](graph, deps, seed)\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, name, raising=False)
    code, out, err = refc(capsys, "compile", SGD, "--scheduler", f"{name}:mine")
    sys.modules.pop(name, None)
    assert code == 0 and out.startswith('program "sgd_momentum"'), err


def test_write_json_atomic_still_writes_json(tmp_path):
    from refcompiler.graph_json import write_json_atomic

    write_json_atomic(tmp_path / "a" / "b.json", {"k": [1, 2]})
    assert json.loads((tmp_path / "a" / "b.json").read_text()) == {"k": [1, 2]}


@pytest.mark.parametrize("argv", [["check", str(SGD)], ["run", str(SGD), "--out", "-"], ["compile", str(SGD)]])
def test_a_full_stdout_is_one_line_and_exit_2_not_an_internal_error(argv):
    # "OSError: [Errno 28] No space left on device", a traceback and exit 4 before
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "refc", *argv], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and done.stderr == f"refc {argv[0]}: cannot write its output: No space left on device\n", done.stderr


def test_a_closed_stdout_is_not_an_internal_error():
    # "AttributeError: 'NoneType' object has no attribute 'flush'", exit 4: Python's
    # sys.stdout is None when refc starts with its stdout closed (`refc compile G >&-`)
    done = subprocess.run([sys.executable, "-m", "refc", "compile", str(SGD)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=120, cwd=ROOT, preexec_fn=lambda: os.close(1))
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_ctrl_c_while_the_parsers_are_built_is_exit_130_without_a_traceback(capsys, monkeypatch):
    """SIGINT in refc's first moments (its command modules being imported) gave a
    KeyboardInterrupt traceback: the handler was around the command only."""
    import refc.cli

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(refc.cli, "build_parser", interrupted)
    assert refc.cli.main(["check", str(SGD)]) == 130
    assert capsys.readouterr().err == "refc: interrupted\n"


_PROGRAM = """
import argparse, atexit, os, signal, sys, time
import refc.cli

signal.signal(signal.SIGINT, signal.default_int_handler)  # a test worker may have started with SIGINT ignored


def string_exec_interrupted(args):  # a Ctrl-C inside the code of a string exec: how dataclasses make methods
    exec("raise KeyboardInterrupt", {})


def numpy_interrupted(args):  # numpy turns a Ctrl-C while its C extensions load into an ImportError
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    except KeyboardInterrupt:
        raise ImportError("Importing the numpy C-extensions failed") from None


def interrupted_at_shutdown(args):  # a Ctrl-C after the command is done, as the interpreter shuts down
    print("done")
    atexit.register(lambda: (os.kill(os.getpid(), signal.SIGINT), time.sleep(1)))
    return 0


class Parser:
    def parse_args(self, argv):
        return argparse.Namespace(func=globals()[sys.argv[1]], command="check", mutant=None)


refc.cli.build_parser = Parser
refc.cli.entry()
"""


@pytest.mark.parametrize("command, exit_code, out, err", [
    # CPython remembers a KeyboardInterrupt that ended a string exec even once caught, and `python -m` ended by the signal
    ("string_exec_interrupted", 130, "", "refc: interrupted\n"),
    ("numpy_interrupted", 130, "", "refc: interrupted\n"),  # was 'internal error (a bug in refc)', exit 4
    ("interrupted_at_shutdown", 0, "done\n", ""),  # was the end by SIGINT, no exit code
])
def test_ctrl_c_is_exit_130_with_one_line_or_too_late_to_matter(tmp_path, command, exit_code, out, err):
    (tmp_path / "interrupted_refc.py").write_text(_PROGRAM)
    done = subprocess.run([sys.executable, "-m", "interrupted_refc", command], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])})
    assert (done.returncode, done.stdout, done.stderr) == (exit_code, out, err)
