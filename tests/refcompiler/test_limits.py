"""``refcompiler.limits``: each limit breached by input built to breach it, before
the memory is used, as exit 2 with one line naming the node or file and the limit."""

from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.cli.inprocess import refc

ROOT = Path(__file__).resolve().parents[2]
SGD = ROOT / "examples" / "sgd_momentum.json"


def _graph(tmp_path: Path, storage: list, nodes: list) -> Path:
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"format": "refc-graph/1", "storage": storage, "nodes": nodes}))
    return path


def _placeholder(name: str, shape: list[int]) -> dict:
    return {"name": name, "kind": "placeholder", "dtype": "float32", "shape": shape}


BROADCAST = ([_placeholder("a", [100000, 1]), _placeholder("b", [1, 100000])], [{"name": "ab", "op": "add", "inputs": ["a", "b"]}])


@pytest.mark.parametrize("command", [["check"], ["run"], ["run", "--reference"], ["compile"], ["prove"], ["validate"], ["export"]])
def test_an_intermediate_over_the_element_limit_is_refused_before_allocation(tmp_path, capsys, command):
    path = _graph(tmp_path, *BROADCAST)
    code, _, err = refc(capsys, *command, path)
    assert code == 2
    # the graph file leads the message, as for every other malformed input (it named only the node)
    assert err.startswith(f"refc {command[0]}: {path}: node 'ab' (add)")
    assert err.strip().endswith("node 'ab' (add) result 0 [100000, 100000]: needs 10000000000 elements in one tensor, "
                                "more than the limit 16777216 (REFC_MAX_ELEMENTS)")
    assert len(err.strip().splitlines()) == 1


def test_the_element_limit_is_adjustable(tmp_path, capsys, monkeypatch):
    path = _graph(tmp_path, *BROADCAST)
    monkeypatch.setenv("REFC_MAX_ELEMENTS", str(10**10))
    monkeypatch.setenv("REFC_MAX_BYTES", str(10**11))
    assert refc(capsys, "check", path)[0] == 0  # check infers shapes only
    monkeypatch.setenv("REFC_MAX_ELEMENTS", "many")
    code, _, err = refc(capsys, "check", path)
    assert code == 2 and "REFC_MAX_ELEMENTS='many': expected a whole number" in err
    monkeypatch.setenv("REFC_MAX_ELEMENTS", "9" * 5000)  # int() raised past 4300 digits: exit 4
    code, _, err = refc(capsys, "check", path)
    assert code == 2 and "REFC_MAX_ELEMENTS='99999" in err and "of at most 4000 digits" in err and len(err) < 300


def test_a_storage_over_the_element_limit(tmp_path, capsys):
    code, _, err = refc(capsys, "check", _graph(tmp_path, [_placeholder("a", [5000, 5000])], []))
    assert code == 2 and "g.json: storage[0] ('a').shape: needs 25000000 elements in one tensor" in err


def test_a_graph_over_the_byte_limit(tmp_path, capsys):
    storage = [_placeholder(f"s{i}", [4096, 4096]) for i in range(400)]  # 64 MiB each
    code, _, err = refc(capsys, "check", _graph(tmp_path, storage, []))
    assert code == 2 and "needs 26843545600 bytes of storage and intermediate results in one graph" in err
    assert "(REFC_MAX_BYTES)" in err


def test_intermediates_count_toward_the_byte_limit(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("REFC_MAX_BYTES", "100")
    nodes = [{"name": "r", "op": "relu", "inputs": ["a"]}, {"name": "n", "op": "neg", "inputs": ["r"]}]
    code, _, err = refc(capsys, "check", _graph(tmp_path, [_placeholder("a", [10])], nodes))
    assert code == 2 and "at node 'n': needs 120 bytes" in err  # 40 storage + 40 + 40 results


def test_reading_an_endless_file_stops_at_the_limit(capsys):
    start = time.monotonic()
    code, _, err = refc(capsys, "check", "/dev/zero")
    assert code == 2 and "/dev/zero: more than the limit of 67108864 bytes" in err and "REFC_MAX_FILE_BYTES" in err
    assert time.monotonic() - start < 20


def test_the_file_size_limit_is_adjustable(capsys, monkeypatch):
    monkeypatch.setenv("REFC_MAX_FILE_BYTES", "100")
    code, _, err = refc(capsys, "check", SGD)
    assert code == 2 and "more than the limit of 100 bytes" in err


def test_the_node_limit(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("REFC_MAX_NODES", "3")
    code, _, err = refc(capsys, "check", SGD)
    assert code == 2 and "nodes and storage entries in one graph file, more than the limit 3 (REFC_MAX_NODES)" in err


@pytest.mark.parametrize("how", [[], ["--reference"]])
def test_runs_over_the_run_limit_are_refused_before_the_first(tmp_path, capsys, how):
    out = tmp_path / "o.npz"
    start = time.monotonic()
    code, _, err = refc(capsys, "run", SGD, *how, "--runs", 10**12, "--out", out)
    assert code == 2 and time.monotonic() - start < 20  # it ran on for hours
    assert err.strip() == (f"refc run: {SGD}: --runs: needs 1000000000000 runs of one graph in a row, "
                           "more than the limit 100000 (REFC_MAX_RUNS)")
    assert not out.exists()


def test_the_run_limit_is_adjustable_and_counts_a_targets_default_runs(capsys, monkeypatch):
    monkeypatch.setenv("REFC_MAX_RUNS", "3")
    assert refc(capsys, "run", SGD, "--runs", 3)[0] == 0
    code, _, err = refc(capsys, "run", SGD, "--runs", 4)
    assert code == 2 and "--runs: needs 4 runs of one graph in a row, more than the limit 3 (REFC_MAX_RUNS)" in err
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("REFC_MAX_RUNS", "1")
    code, _, err = refc(capsys, "run", SGD, "--target", "onnxruntime")  # two runs of each configuration
    assert code == 2 and "needs 2 runs" in err


def test_runs_times_the_graphs_bytes_are_bounded(capsys, monkeypatch):
    monkeypatch.setenv("REFC_MAX_RUN_BYTES", "1000")  # the example's storage and results: 356 bytes a run
    assert refc(capsys, "run", SGD, "--runs", 2)[0] == 0
    code, _, err = refc(capsys, "run", SGD, "--reference", "--runs", 3)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.strip().endswith("--runs 3 of 356 bytes each: needs 1068 bytes of storage and intermediate results "
                                "over all runs, more than the limit 1000 (REFC_MAX_RUN_BYTES)")


def _bomb(path: Path, shape: tuple[int, ...]) -> None:
    """An .npz whose one member claims ``shape`` and compresses to almost nothing."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf, zf.open("x.npy", "w", force_zip64=True) as m:
        np.lib.format.write_array_header_1_0(m, {"descr": "<f4", "fortran_order": False, "shape": shape})
        for _ in range(64):
            m.write(bytes(1 << 20))


def test_an_npz_is_checked_from_its_headers_before_decompressing(tmp_path, capsys):
    bomb = tmp_path / "bomb.npz"
    _bomb(bomb, (20000, 20000))
    assert bomb.stat().st_size < 1 << 20
    code, _, err = refc(capsys, "run", SGD, "--inputs", bomb)
    assert code == 2 and "bomb.npz: 'x': needs 400000000 elements in one tensor" in err


def test_an_npz_over_the_file_byte_limit(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("REFC_MAX_FILE_BYTES", "3000")  # above the graph file, below the arrays
    path = tmp_path / "in.npz"
    np.savez(path, x=np.zeros((4, 3), np.float32), w=np.zeros((30, 30), np.float32))
    code, _, err = refc(capsys, "run", SGD, "--inputs", path)
    assert code == 2 and "'w' (decompressed): needs 3648 bytes in one input file" in err


def test_an_npz_of_high_rank_or_objects(tmp_path, capsys):
    path = tmp_path / "rank.npz"
    np.savez(path, x=np.zeros([1] * 12, np.float32))
    code, _, err = refc(capsys, "run", SGD, "--inputs", path)
    assert code == 2 and "rank.npz: 'x': rank 12 is above 8" in err
    path = tmp_path / "obj.npz"
    np.savez(path, x=np.array([1, "a"], dtype=object))
    code, _, err = refc(capsys, "run", SGD, "--inputs", path)
    assert code == 2 and "obj.npz: 'x': dtype object is not a number type" in err


def test_a_long_value_is_cut_and_counted_by_its_own_characters() -> None:
    from refcompiler.limits import shown

    assert shown("a" * 129).endswith("...' (129 characters)") and len(shown("a" * 129)) < 90
    assert shown("ab") == "'ab'"
    assert shown(list(range(100))).endswith(f"... ({len(repr(list(range(100))))} characters written out)")
