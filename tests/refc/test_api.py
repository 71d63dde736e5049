"""The public API: one namespace, lazily loaded, graphs that print as refc-graph/1,
and the README's tutorial run as a user would run it (outside the repository, with
Hypothesis's default settings but the deadline, and the pytest plugin)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from hypothesis import given

import refc
from refc.strategies import ExampleGraph, graphs, invalid_graphs, schedules
from refcompiler.graph_json import graph_from_doc

ROOT = Path(__file__).resolve().parents[2]


def test_importing_refc_loads_neither_the_cli_nor_hypothesis_nor_z3():
    code = "import sys, refc; print(sorted({m.split('.')[0] for m in sys.modules} & {'hypothesis', 'z3', 'fuzz'}), 'refc.cli' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.split() == ["[]", "False"]


def test_the_public_names_are_the_ones_the_packages_define():
    from fuzz.oracle import check
    from refcompiler.verifier import violations

    assert refc.check is check and refc.validate is violations
    assert set(refc.__all__) <= set(dir(refc))
    try:
        refc.no_such_name
    except AttributeError as e:
        assert "no_such_name" in str(e)
    else:
        raise AssertionError("refc.no_such_name resolved")


@given(graphs())
def test_drawn_graphs_print_as_their_json_and_compare_equal_to_plain_graphs(graph):
    assert isinstance(graph, ExampleGraph)
    again = graph_from_doc(json.loads(repr(graph)))
    assert again == graph and graph == again and hash(again) == hash(graph)
    assert refc.validate(graph) == []


@given(graphs(max_dim=12))
def test_the_public_graphs_take_max_dim_as_the_readme_says(graph):
    assert isinstance(graph, ExampleGraph) and refc.validate(graph) == []


@given(invalid_graphs("OWN-4"))
def test_invalid_graphs_break_their_invariant(graph):
    assert "OWN-4" in [v.invariant for v in refc.validate(graph)]


@given(graphs(max_nodes=4).flatmap(lambda g: schedules(g).map(lambda choice: (g, choice))))
def test_schedules_are_choices_check_accepts(pair):
    graph, choice = pair
    assert refc.check(graph, choice, pipeline="O2") is None


def tutorial(tmp_path: Path) -> Path:
    """The README tutorial's two files, and a small corpus, in a directory of their own."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    (tmp_path / "my_passes.py").write_text(blocks[0])
    (tmp_path / "test_my_passes.py").write_text(blocks[1])
    (tmp_path / "corpus").mkdir()
    for name in ("example.read_then_save", "reject.OWN-2", "mutant.sched-drop-save-war"):
        shutil.copy(ROOT / "corpus" / f"{name}.json", tmp_path / "corpus")
    return tmp_path


def user_pytest(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "HYPOTHESIS"))}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning", "-rA", "--hypothesis-seed=0", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=300, check=False)


def test_the_tutorial_finds_the_bug_and_the_plugin_replays_the_corpus(tmp_path):
    done = user_pytest(tutorial(tmp_path), "--refc-corpus", "corpus", ".")
    out = done.stdout
    assert done.returncode == 1, out[-3000:]
    assert re.search(r"^FAILED test_my_passes.py::test_my_pipeline_keeps_owned_state", out, re.M)
    assert re.search(r"^PASSED test_my_passes.py::test_the_verifier_rejects_foreign_reads_of_owned_state", out, re.M)
    for name in ("example.read_then_save", "reject.OWN-2", "mutant.sched-drop-save-war"):
        assert re.search(rf"^PASSED corpus/{re.escape(name)}.json::{re.escape(name)}$", out, re.M), name
    shown = re.search(r"^E\s+graph=(\{.*\}),$", out, re.M)
    assert shown, out[-3000:]
    graph = graph_from_doc(json.loads(shown[1]))
    assert {n.op.value for n in graph.nodes} & {"quantization_profile", "accumulate"} and len(graph.nodes) <= 3


def test_the_plugin_reports_a_case_that_no_longer_behaves(tmp_path):
    """Against a mutant, the verdicts of `refc replay --mutant`: a case that kills
    it passes (reject.OWN-2 kills verify-allow-foreign-state), one recorded against
    it that no longer kills it fails."""
    root = tutorial(tmp_path)
    doc = json.loads((root / "corpus" / "example.read_then_save.json").read_text())
    doc["mutant"] = "verify-allow-foreign-state"  # no owned state: this mutant changes nothing here
    (root / "corpus" / "stale.json").write_text(json.dumps(doc))
    done = user_pytest(root, "--refc-corpus", "corpus", "--refc-mutant", "verify-allow-foreign-state", "corpus")
    assert done.returncode == 1
    assert re.search(r"^PASSED corpus/reject.OWN-2.json::reject.OWN-2", done.stdout, re.M), done.stdout[-3000:]
    assert re.search(r"^FAILED corpus/stale.json::stale", done.stdout, re.M), done.stdout[-3000:]
    assert "no longer kills verify-allow-foreign-state" in done.stdout
    assert "replay: refc replay" in done.stdout and "Traceback" not in done.stdout
