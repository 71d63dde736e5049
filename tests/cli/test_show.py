"""Pictures on the command line: ``refc show``, ``refc prove`` and ``refc compile``
with ``--format dot|svg|png`` and ``-o``; without Graphviz, exit 2 naming it."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from refcompiler.graph_json import load_graph
from tests.cli.inprocess import refc
from tests.refcompiler.pictures.dot_reader import read

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
# the graphs of tests/data/prove an ownership rule rejects (save_cycle is valid and proved)
PROVE = [ROOT / "tests/data/prove" / f"{stem}.json" for stem in ("foreign_state", "save_into_constant", "two_saves")]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_show_dot_draws_every_storage_value_and_node(capsys, path):
    code, out, err = refc(capsys, "show", path, "--format", "dot")
    assert (code, err) == (0, "")
    graph = load_graph(path)
    pic = read(out)
    assert {f"node:{n.name}" for n in graph.nodes} <= set(pic.vertices)
    assert {f"entry:{s.name}" for s in graph.storage} <= set(pic.vertices)
    assert sum(1 for s, d, a in pic.edges if a.get("label", "").startswith("in ")) == sum(len(n.inputs) for n in graph.nodes)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_show_svg_and_png_to_a_file(capsys, tmp_path, path):
    code, out, err = refc(capsys, "show", path, "--format", "svg", "-o", tmp_path / "g.svg")
    assert (code, out, err) == (0, "", "")
    root = ET.parse(tmp_path / "g.svg").getroot()
    assert root.tag.endswith("svg") and load_graph(path).nodes[0].name in ET.tostring(root, encoding="unicode")
    code, out, err = refc(capsys, "show", path, "--format", "png", "-o", tmp_path / "g.png")
    assert code == 0 and (tmp_path / "g.png").read_bytes().startswith(PNG_MAGIC)


def test_show_of_a_case_draws_its_schedule_and_what_it_breaks(capsys):
    code, out, err = refc(capsys, "show", ROOT / "corpus/mutant.sched-drop-save-war.json", "--format", "dot")
    assert code == 0
    pic = read(out)
    assert [pic.vertices[f"schedule1:{k}"]["label"].split("\n")[0] for k in range(2)] == ["1. save7", "2. save6"]
    assert "kills mutant sched-drop-save-war" in out and "runs too early" in out


def test_show_of_a_case_with_a_malformed_schedule_is_exit_2(capsys, tmp_path):
    doc = json.loads((ROOT / "corpus/mutant.sched-drop-save-war.json").read_text())
    doc["schedule"] = "save7 save6"
    path = tmp_path / "case.json"
    path.write_text(json.dumps(doc))
    code, out, err = refc(capsys, "show", path, "--format", "dot")
    assert (code, out) == (2, "") and err == f"refc show: {path}: schedule: must be a list of node names\n"


def test_without_graphviz_a_picture_is_exit_2_naming_the_package(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    for argv in (["show", EXAMPLES[0], "--format", "svg"], ["compile", EXAMPLES[0], "--format", "png"]):
        code, out, err = refc(capsys, *argv)
        assert (code, out) == (2, "") and len(err.splitlines()) == 1 and "apt-get install graphviz" in err
    code, out, err = refc(capsys, "show", EXAMPLES[0], "--format", "dot")  # DOT text needs nothing
    assert code == 0 and out.startswith("digraph")


@pytest.mark.parametrize("path", PROVE, ids=lambda p: p.stem)
def test_prove_draws_a_counterexample_of_an_invalid_graph(capsys, path):
    code, out, err = refc(capsys, "prove", path, "--no-verify", "--format", "dot")
    assert (code, err) == (1, "")
    pic = read(out)
    assert {"cluster_graph", "cluster_schedule1", "cluster_schedule2"} <= set(pic.clusters)
    assert "missing ordering" in out


def test_prove_pictures_of_a_proof_and_of_a_rejected_graph(capsys, tmp_path):
    code, out, err = refc(capsys, "prove", ROOT / "examples/read_then_save.json", "--format", "svg", "-o", tmp_path / "p.svg")
    assert (code, out, err) == (0, "", "") and ET.parse(tmp_path / "p.svg").getroot().tag.endswith("svg")
    code, out, err = refc(capsys, "prove", PROVE[0], "--format", "dot")
    assert code == 1 and any(v.startswith("violation:") for v in read(out).vertices)


def test_prove_format_is_bad_usage_with_json_and_o_needs_a_picture(capsys, tmp_path):
    for argv in (["--json", "--format", "dot"], ["-o", tmp_path / "x.txt"]):
        code, out, err = refc(capsys, "prove", EXAMPLES[0], *argv)
        assert (code, out) == (2, "") and len(err.splitlines()) == 1
    assert not (tmp_path / "x.txt").exists()


def test_compile_draws_the_ir_and_the_arena(capsys, tmp_path):
    g = ROOT / "examples/sgd_momentum.json"
    code, out, err = refc(capsys, "compile", g, "--pipeline", "O2", "--format", "dot")
    assert code == 0 and "shared buffer: holds y, err, sq" in out and read(out).vertices
    code, out, err = refc(capsys, "compile", g, "--pipeline", "O2", "--format", "svg", "--picture", "arena", "-o", tmp_path / "a.svg")
    assert (code, out, err) == (0, "", "") and "%y = y, err, sq" in (tmp_path / "a.svg").read_text()
    code, out, err = refc(capsys, "compile", g, "--picture", "arena")
    assert (code, out) == (2, "") and "--format svg" in err
    code, out, err = refc(capsys, "compile", g, "-o", tmp_path / "ir.txt")
    assert code == 0 and (tmp_path / "ir.txt").read_text().startswith('program "sgd_momentum"')
