"""Bug folders: every file a maintainer needs, a repro script that uses only numpy
and onnxruntime, and nothing written when the target no longer fails."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from refcompiler.graph_json import load_graph
from refcompiler.targets.bugs import write_bug_folder

SGD = load_graph(Path(__file__).resolve().parents[3] / "examples" / "sgd_momentum.json")
FAKE = "tests.refcompiler.targets.fake_targets:"


def test_a_planted_onnxruntime_failure_gets_a_folder_whose_repro_runs_without_refc(tmp_path):
    d = write_bug_folder(tmp_path / "bug", FAKE + "ORT_PLANTED", SGD, isolate=False)
    assert d is not None and d.invariant == "TGT-2" and d.run == 2 and d.bitwise
    files = {p.name for p in (tmp_path / "bug").iterdir()}
    assert files == {"model.onnx", "ort_config.json", "repro.py", "inputs.npz", "expected.npz", "finding.json", "versions.txt", "graph.json"}
    finding = json.loads((tmp_path / "bug" / "finding.json").read_text())
    config = json.loads((tmp_path / "bug" / "ort_config.json").read_text())
    assert finding["failing"] == d.failing == config["failing"]["key"] and finding["passing"] == config["passing"]["key"]
    assert "onnxruntime==" in (tmp_path / "bug" / "versions.txt").read_text()
    assert set(np.load(tmp_path / "bug" / "inputs.npz").files) == set(config["inputs"])
    script = (tmp_path / "bug" / "repro.py").read_text()
    assert "refc" not in script.replace("refc)", "").replace("by refc", "")
    # the planted bug is not in the real onnxruntime: its script runs and finds nothing
    ran = subprocess.run([sys.executable, "-I", str(tmp_path / "bug" / "repro.py")], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "failing configuration: " + d.failing in ran.stdout


def test_the_repro_shows_a_real_reference_mismatch(tmp_path):
    d = write_bug_folder(tmp_path / "bug", FAKE + "ORT_PLANTED", SGD, isolate=False)
    finding = json.loads((tmp_path / "bug" / "finding.json").read_text())
    # turn it into a reference finding against a wrong expected value: the script must fail
    finding.update(kind="reference", storage="w", run=1, bitwise=True)
    (tmp_path / "bug" / "finding.json").write_text(json.dumps(finding))
    expected = dict(np.load(tmp_path / "bug" / "expected.npz"))
    expected["w.run1"] = expected["w.run1"] + 1
    np.savez(tmp_path / "bug" / "expected.npz", **expected)
    ran = subprocess.run([sys.executable, "-I", str(tmp_path / "bug" / "repro.py")], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 1 and "w after run 1" in ran.stdout, ran.stdout + ran.stderr
    assert d is not None


def test_nothing_is_written_for_a_target_that_does_not_fail(tmp_path):
    assert write_bug_folder(tmp_path / "bug", "onnxruntime-pairs", SGD) is None
    assert not (tmp_path / "bug").exists()


def test_a_planted_tvm_failure_gets_a_folder_whose_repro_needs_only_tvm(tmp_path):
    d = write_bug_folder(tmp_path / "bug", FAKE + "TVM_PLANTED", SGD, isolate=False)
    assert d is not None and d.invariant == "TGT-2" and (d.failing, d.passing) == ("inplace", "default")
    files = {p.name for p in (tmp_path / "bug").iterdir()}
    assert files == {"model.onnx", "tvm_config.json", "repro.py", "inputs.npz", "expected.npz", "finding.json", "versions.txt", "graph.json"}
    config = json.loads((tmp_path / "bug" / "tvm_config.json").read_text())
    assert config["passing"] == {"key": "default", "relax_pipeline": "default"}
    assert "transform.DataflowUseInplaceCalls" in config["failing"]["relax_pipeline"]
    assert "apache-tvm==" in (tmp_path / "bug" / "versions.txt").read_text()
    script = (tmp_path / "bug" / "repro.py").read_text()
    assert "refc" not in script.replace("by refc", "") and "onnxruntime" not in script
    # the planted bug is not in the real TVM: the script runs both pipelines and finds nothing
    ran = subprocess.run([sys.executable, "-I", str(tmp_path / "bug" / "repro.py")], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0 and "failing configuration: inplace" in ran.stdout, ran.stdout + ran.stderr
    # against a wrong expected value, it shows the mismatch
    finding = json.loads((tmp_path / "bug" / "finding.json").read_text())
    finding.update(kind="reference", storage="v", run=2, bitwise=True)
    (tmp_path / "bug" / "finding.json").write_text(json.dumps(finding))
    expected = dict(np.load(tmp_path / "bug" / "expected.npz"))
    expected["v.run2"] = expected["v.run2"] * 2
    np.savez(tmp_path / "bug" / "expected.npz", **expected)
    ran = subprocess.run([sys.executable, "-I", str(tmp_path / "bug" / "repro.py")], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 1 and "v after run 2" in ran.stdout, ran.stdout + ran.stderr


def test_a_targets_bug_files_stay_in_its_folder_and_are_bytes(tmp_path):
    import pytest

    from refcompiler.errors import ExecutionError

    folder = tmp_path / "out" / "bugs" / "one"
    for isolate in (False, True):
        with pytest.raises(ExecutionError, match=r"bug_files\(\) returned '\.\./\.\./summary\.json', not a plain file name"):
            write_bug_folder(folder, FAKE + "ESCAPING_FILES", SGD, isolate=isolate)
        assert not (tmp_path / "out" / "summary.json").exists() and not (folder / "ok.txt").exists()
        with pytest.raises(ExecutionError, match=r"returned a str for 'repro\.py', not bytes"):
            write_bug_folder(folder, FAKE + "TEXT_FILES", SGD, isolate=isolate)
        assert not folder.exists()


REFC_FILES = {"inputs.npz", "expected.npz", "finding.json", "versions.txt", "graph.json"}


def test_a_crashing_targets_files_are_made_in_its_child(tmp_path):
    d = write_bug_folder(tmp_path / "bug", FAKE + "SEGFAULTS", SGD)  # isolated: the crash is in the child, in a session
    assert d is not None and d.kind.value == "crash"
    assert {p.name for p in (tmp_path / "bug").iterdir()} == REFC_FILES | {"program.txt"}
    assert json.loads((tmp_path / "bug" / "finding.json").read_text())["target_files"] == ["program.txt"]


def test_a_target_whose_child_dies_making_its_files_gets_refcs_files_and_the_reason(tmp_path):
    d = write_bug_folder(tmp_path / "bug", FAKE + "BUILD_SEGFAULTS", SGD)
    assert d is not None and d.kind.value == "crash"
    assert {p.name for p in (tmp_path / "bug").iterdir()} == REFC_FILES
    why = json.loads((tmp_path / "bug" / "finding.json").read_text())["target_files"]
    assert why.startswith("not written: the target's child process made none (the target process died (killed by signal SIGSEGV))"), why


def test_without_isolation_a_crash_does_not_run_the_target_in_refcs_process(tmp_path):
    d = write_bug_folder(tmp_path / "bug", FAKE + "RAISES", SGD, isolate=False)
    assert d is not None and d.kind.value in ("crash", "error")
    finding = json.loads((tmp_path / "bug" / "finding.json").read_text())
    if d.kind.value == "crash":
        assert finding["target_files"].startswith("not written: the target's crash would happen in refc's own process")
    else:
        assert finding["target_files"] == ["program.txt"]


def test_a_file_name_the_file_system_cannot_take_is_the_targets_error(tmp_path):
    import pytest

    from refcompiler.errors import ExecutionError

    with pytest.raises(ExecutionError, match="not a plain file name"):
        write_bug_folder(tmp_path / "bug", FAKE + "SURROGATE_FILES", SGD)
