"""``refc check``, ``refc show`` and ``refc run``: exit codes, one-line messages, outputs.

Calls ``refc.cli.main`` in-process (fast); a handful of subprocess
calls at the end prove that the installed console script behaves the same
and that no traceback reaches a user.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from refc.cli import COMMANDS
from refcompiler.graph import StorageKind
from refcompiler.graph_json import load_graph
from refcompiler.printer import checksum
from refcompiler.values import same_bits, save_npz
from tests.hand_numpy import expected
from tests.cli.inprocess import refc

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
DATA = ROOT / "tests" / "data"
INVALID = sorted((DATA / "invalid").glob("*.json"))
OUT_OF_RANGE = DATA / "run_errors" / "embedding_id_out_of_range.json"

# Each malformed file and what its one-line message must name (the field or node).
MALFORMED = {
    "not_json": "not valid JSON (line 3",
    "empty": "the file is empty",
    "top_level_not_object": "the top level must be an object, got a list",
    "unknown_format": "format: unsupported format version 'refc-graph/2'",
    "missing_format": "format: missing field 'format'",
    "unknown_op": "nodes[0] ('r').op: unknown op 'softmax'",
    "missing_field": "storage[0] ('A'): missing field 'dtype'",
    "missing_node_field": "nodes[0] ('r'): missing field 'op'",
    "unknown_field": "storage[0] ('A'): unknown field 'shpae'",
    "mistyped_field": "storage[0] ('A').shape: expected a list, got a string",
    "mistyped_inputs": "nodes[0] ('r').inputs: expected a list, got a string",
    "bad_dtype": "storage[0] ('A').dtype: unknown dtype 'float64'",
    "negative_dimension": "storage[0] ('A').shape[1]: dimension -2 is not in 1..2147483647",
    "init_value_count": "storage[0] ('A').init.value: has 3 elements where the shape [4] needs 4",
    "duplicate_name": "nodes[1] ('r'): duplicate name 'r'",
    "dangling_reference": "nodes[0] ('r').inputs[0]: 'B' names no storage or node",
    "dangling_save_target": "nodes[1] ('s').attrs.target: 'B' names no storage",
    "dangling_owner": "storage[1] ('acc').owner: 'nobody' names no node",
}




def one_line(text: str) -> str:
    lines = text.splitlines()
    assert len(lines) == 1, f"expected one line, got {text!r}"
    assert "Traceback" not in text
    return lines[0]


def test_commands_are_registered():
    assert {"check", "show", "run"} <= set(COMMANDS)


# ------------------------------------------------------------ check


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_check_accepts_each_example(capsys, path):
    code, out, err = refc(capsys, "check", path)
    assert (code, err) == (0, "")
    assert one_line(out) == f"{path}: ok ({len(load_graph(path).nodes)} nodes, {len(load_graph(path).storage)} storage)"


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_check_rejects_each_invalid_graph_with_its_id(capsys, path):
    want = path.name.split(".")[0]
    code, out, err = refc(capsys, "check", path)
    assert (code, err) == (1, "")
    lines = out.splitlines()
    assert lines and all(line.startswith(f"{path}: {want}: ") for line in lines), out


def test_every_malformed_file_has_an_expected_message():
    assert sorted(p.stem for p in (DATA / "malformed").glob("*.json")) == sorted(MALFORMED)


@pytest.mark.parametrize("stem", sorted(MALFORMED))
def test_check_reports_each_malformed_file_in_one_line(capsys, stem):
    path = DATA / "malformed" / f"{stem}.json"
    code, out, err = refc(capsys, "check", path)
    assert (code, out) == (2, "")
    line = one_line(err)
    assert line.startswith(f"refc check: {path}: ")
    assert MALFORMED[stem] in line


@pytest.mark.parametrize("command", [["show"], ["show", "--format", "dot"], ["run", "--reference"]])
@pytest.mark.parametrize("stem", ["not_json", "unknown_op", "dangling_reference"])
def test_show_and_run_report_malformed_files_the_same_way(capsys, command, stem):
    path = DATA / "malformed" / f"{stem}.json"
    code, out, err = refc(capsys, *command, path)
    assert (code, out) == (2, "")
    assert one_line(err).startswith(f"refc {command[0]}: {path}: ")
    assert MALFORMED[stem] in err


def test_a_missing_file_is_exit_2(capsys, tmp_path):
    for command in (["check"], ["show"], ["run", "--reference"]):
        code, out, err = refc(capsys, *command, tmp_path / "absent.json")
        assert code == 2 and "absent.json: no such file" in one_line(err)


def test_bad_usage_is_exit_2(capsys):
    for argv in (["check"], ["show", EXAMPLES[0], "--format", "jpeg"], ["run", "--reference", "--runs", "0", EXAMPLES[0]],
                 ["run", "--reference", "--runs", "two", EXAMPLES[0]], ["frobnicate"]):
        code, out, err = refc(capsys, *argv)
        assert code == 2 and out == "" and "Traceback" not in err, argv


def test_an_unknown_mutant_is_exit_2(capsys):
    code, out, err = refc(capsys, "check", EXAMPLES[0], "--mutant", "no-such-mutant")
    assert code == 2 and "unknown mutant 'no-such-mutant'" in one_line(err)


def test_a_bug_in_refc_is_exit_4_not_a_finding(capsys, monkeypatch):
    import refcompiler.verifier as verifier  # refc check imports violations when it runs

    def broken(graph):
        raise RuntimeError("boom")

    monkeypatch.setattr(verifier, "violations", broken)
    code, out, err = refc(capsys, "check", EXAMPLES[0], internal_error=True)
    assert code == 4
    assert "RuntimeError: boom" in err and err.rstrip().splitlines()[-1].startswith("refc check: internal error")


# ------------------------------------------------------------ show


def test_show_text_lists_storage_by_kind_nodes_state_and_saves(capsys):
    code, out, err = refc(capsys, "show", ROOT / "examples" / "quantization_profile.json")
    assert (code, err) == (0, "")
    sections = [line for line in out.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert sections == ["constants:", "placeholders:", "owned:", "nodes:"]
    assert re.search(r"^  W +float32\[4\] +seed 3$", out, re.M)
    assert re.search(r"^  minmax +float32\[2\] +value \[0\.0, 0\.0\] +owner prof$", out, re.M)
    assert re.search(r"^  hist +float32\[8\] +zeros +owner prof$", out, re.M)
    assert re.search(r"^  sum = add\(A, W\) +: float32\[4\]$", out, re.M)
    assert re.search(r"^  prof = quantization_profile\(sum\) \{lo=-2\.0, hi=2\.0\} +state: minmax, hist \(owned\)$", out, re.M)
    assert re.search(r"^  save act -> A +\(node s\)$", out, re.M)
    assert "violations" not in out


def test_show_text_of_several_results_and_int_seeds(capsys):
    _, out, _ = refc(capsys, "show", ROOT / "examples" / "sgd_momentum.json")
    assert re.search(r"step = sgd_momentum\(w, grad, v\) \{lr=0\.05, mu=0\.9\} +: step:0 float32\[3, 2\], step:1 float32\[3, 2\]", out)
    assert "save step:0 -> w" in out
    _, out, _ = refc(capsys, "show", ROOT / "examples" / "embedding_update.json")
    assert re.search(r"ids +int32\[5\] +seed 4 in \[0, 6\)", out)


def test_show_text_of_an_invalid_graph_lists_its_violations(capsys):
    path = DATA / "invalid" / "OWN-2.foreign_state.json"
    code, out, err = refc(capsys, "show", path)
    assert (code, err) == (0, "")
    assert "state: acc (owned by running)" in out
    assert out.rstrip().splitlines()[-2:] == [
        "violations:",
        "  OWN-2: node 'other' uses owned variable 'acc' as state, but its owner is 'running'",
    ]


# the DOT picture is tested in tests/cli/test_show.py


# ------------------------------------------------------------ run


def storage_names(path: Path) -> list[str]:
    return [s.name for s in load_graph(path).storage if s.kind is not StorageKind.CONSTANT]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_run_reference_twice_writes_what_numpy_by_hand_computes(capsys, tmp_path, path):
    out_file = tmp_path / "final.npz"
    code, out, err = refc(capsys, "run", path, "--reference", "--runs", "2", "--out", out_file)
    assert (code, err) == (0, "")
    assert one_line(out) == f"{path}: wrote {len(storage_names(path))} arrays after 2 runs to {out_file}"
    want = expected(path.stem, 2)
    with np.load(out_file) as got:
        assert sorted(got.files) == sorted(storage_names(path)) == sorted(want)
        for name in want:
            assert same_bits(got[name], want[name]), name


def test_run_without_out_prints_a_summary_with_checksums(capsys):
    path = ROOT / "examples" / "read_then_save.json"
    code, out, err = refc(capsys, "run", path, "--reference")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"{path}: reference, after 1 run:"
    want = expected("read_then_save", 1)
    assert len(lines) == 1 + len(want)
    for line, name in zip(lines[1:], ["A", "out"], strict=True):
        fields = line.split()
        assert fields[:3] == [name, "placeholder", "float32[4]"]
        assert fields[3] == f"sha256:{checksum(want[name])}"
        assert f"{float(want[name][0]):.6g}" in line


def test_checksum_tells_one_flipped_bit_and_the_dtype():
    a = np.arange(4, dtype=np.float32)
    b = a.copy()
    b.view(np.uint32)[2] ^= 1
    assert checksum(a) == checksum(a.copy()) != checksum(b)
    assert checksum(a) != checksum(a.view(np.int32))


def test_run_inputs_override_initial_values(capsys, tmp_path):
    path = ROOT / "examples" / "read_then_save.json"
    inputs, out_file = tmp_path / "in.npz", tmp_path / "out.npz"
    A = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    save_npz(str(inputs), {"A": A})
    code, _, err = refc(capsys, "run", path, "--reference", "--inputs", inputs, "--out", out_file)
    assert (code, err) == (0, "")
    W = np.random.default_rng(3).standard_normal(4).astype(np.float32)
    with np.load(out_file) as got:
        assert same_bits(got["A"], A + W) and same_bits(got["out"], A * A)


@pytest.mark.parametrize(
    "arrays, fragment",
    [
        ({"B": np.zeros(4, np.float32)}, "B: 'B' names no storage"),
        ({"W": np.zeros(4, np.float32)}, "W: 'W' names a constant"),
        ({"A": np.zeros(5, np.float32)}, "A: value is float32[5], storage 'A' is float32[4]"),
        ({"A": np.zeros(4, np.float64)}, "A: value is float64[4], storage 'A' is float32[4]"),
    ],
    ids=["unknown key", "constant", "shape", "dtype"],
)
def test_run_bad_inputs_are_exit_2_naming_file_and_key(capsys, tmp_path, arrays, fragment):
    inputs = tmp_path / "in.npz"
    save_npz(str(inputs), arrays)
    code, out, err = refc(capsys, "run", ROOT / "examples" / "read_then_save.json", "--reference", "--inputs", inputs)
    assert (code, out) == (2, "")
    assert one_line(err).startswith(f"refc run: {inputs}: {fragment}")


def test_run_inputs_that_are_no_npz_archive_are_exit_2(capsys, tmp_path):
    npy, text = tmp_path / "a.npy", tmp_path / "t.npz"
    np.save(npy, np.zeros(4, np.float32))
    text.write_text("not an archive")
    for path in (npy, text, tmp_path / "absent.npz"):
        code, out, err = refc(capsys, "run", EXAMPLES[0], "--reference", "--inputs", path)
        assert code == 2 and one_line(err).startswith(f"refc run: {path}: ")


def test_run_out_that_cannot_be_written_is_exit_2(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, out, err = refc(capsys, "run", EXAMPLES[0], "--reference", "--out", blocker / "sub" / "x.npz")
    assert code == 2 and "cannot write" in one_line(err)


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_run_verifies_first(capsys, path):
    want = path.name.split(".")[0]
    code, out, err = refc(capsys, "run", path, "--reference")
    assert (code, err) == (1, "")
    assert out.splitlines() and all(line.startswith(f"{path}: {want}: ") for line in out.splitlines())


def test_run_time_error_is_exit_1_naming_node_and_id(capsys):
    code, out, err = refc(capsys, "run", OUT_OF_RANGE, "--reference")
    assert (code, out) == (1, "")
    line = one_line(err)
    assert line.startswith(f"refc run: {OUT_OF_RANGE}: node 'emb' (embedding_update): ")
    assert "embedding id 7 is out of range for a table of 4 rows" in line


@pytest.mark.parametrize("pipeline", ["O0", "O2"])
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_run_compiled_twice_writes_what_numpy_by_hand_computes(capsys, tmp_path, path, pipeline):
    out_file = tmp_path / "compiled.npz"
    code, out, err = refc(capsys, "run", path, "--runs", "2", "--pipeline", pipeline, "--scheduler", "random",
                          "--seed", "5", "--out", out_file)
    assert (code, err) == (0, "")
    want = expected(path.stem, 2)
    with np.load(out_file) as got:
        assert sorted(got.files) == sorted(want)
        for name in want:
            assert same_bits(got[name], want[name]), name


def test_run_compiled_reports_invalid_graphs_and_run_time_errors_like_the_reference(capsys):
    code, out, err = refc(capsys, "run", DATA / "invalid" / "OWN-4.json")
    assert (code, err) == (1, "") and out.startswith(f"{DATA / 'invalid' / 'OWN-4.json'}: OWN-4: ")
    code, out, err = refc(capsys, "run", OUT_OF_RANGE, "--pipeline", "O2")
    assert (code, out) == (1, "")
    line = one_line(err)
    assert line.startswith(f"refc run: {OUT_OF_RANGE}: ") and "'emb'" in line and "id 7" in line


def test_run_compiled_summary_names_how_it_ran(capsys):
    code, out, err = refc(capsys, "run", ROOT / "examples" / "read_then_save.json")
    assert (code, err) == (0, "")
    assert out.splitlines()[0].endswith(": compiled, after 1 run:")
    want = expected("read_then_save", 1)
    assert f"sha256:{checksum(want['A'])}" in out and f"sha256:{checksum(want['out'])}" in out


# ------------------------------------------------------------ the console script


def console(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["refc", *map(str, argv)], capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_console_script_exit_codes_and_no_traceback():
    ok = console("check", ROOT / "examples" / "sgd_momentum.json")
    assert ok.returncode == 0 and "ok" in ok.stdout
    malformed = console("check", DATA / "malformed" / "unknown_op.json")
    assert malformed.returncode == 2 and malformed.stdout == ""
    assert MALFORMED["unknown_op"] in one_line(malformed.stderr)
    invalid = console("run", "--reference", DATA / "invalid" / "OWN-2.json")
    assert invalid.returncode == 1 and "OWN-2" in invalid.stdout and invalid.stderr == ""
    runtime = console("run", "--reference", OUT_OF_RANGE)
    assert runtime.returncode == 1 and "embedding id 7" in one_line(runtime.stderr)


def test_python_dash_m_refcompiler_is_the_same_command():
    done = subprocess.run([sys.executable, "-m", "refcompiler", "show", ROOT / "examples" / "read_then_save.json"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0 and "save sum -> A" in done.stdout and done.stderr == ""
