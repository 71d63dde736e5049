"""Pictures on the command line: ``refc show``, ``refc prove`` and ``refc compile``
with ``--format dot|svg|png`` and ``-o``; without Graphviz, exit 2 naming it."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from refcompiler.driver import prepare
from refcompiler.graph_json import graph_from_doc, load_graph
from refcompiler.pictures.graph import ERROR
from tests.cli.inprocess import refc
from tests.refcompiler.pictures.dot_reader import attrs, read

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


def test_show_of_a_case_draws_its_schedule_and_what_it_breaks(capsys, tmp_path):
    doc = json.loads((ROOT / "examples/read_then_save.json").read_text())
    path = tmp_path / "case.json"
    path.write_text(json.dumps({**doc, "schedule": ["s", "sum", "late", "save_late"], "mutant": "sched-drop-save-war"}))
    code, out, err = refc(capsys, "show", path, "--format", "dot")
    assert code == 0
    pic = read(out)
    assert [pic.vertices[f"schedule1:{k}"]["label"].split("\n")[0] for k in range(2)] == ["1. s", "2. sum"]
    assert "kills mutant sched-drop-save-war" in out and "runs too early" in out


CASE = ROOT / "corpus/mutant.sched-drop-save-war.json"


@pytest.mark.parametrize("pipeline, flags", [("O2", ""), ("my_passes:PIPELINE", " --allow-plugin my_passes")])
def test_a_case_whose_schedule_breaks_nothing_points_at_its_program_with_a_command_that_runs(capsys, tmp_path, pipeline, flags):
    doc = json.loads((ROOT / "corpus/mutant.share-ignore-later-reads.json").read_text())
    path = tmp_path / "case.json"
    path.write_text(json.dumps({**doc, "pipeline": pipeline}))
    code, out, err = refc(capsys, "show", path, "--format", "dot")
    assert code == 0 and "the failure is in the compiled program" in out
    assert f"(refc compile {path} --format svg{flags})" in out.replace("\\n", " ").replace("\n", " ")


def show_edited_case(capsys, tmp_path, edit, *argv):
    """``refc show`` of the corpus case ``CASE`` with ``edit(doc)`` applied."""
    doc = json.loads(CASE.read_text())
    edit(doc)
    path = tmp_path / "case.json"
    path.write_text(json.dumps(doc))
    return path, refc(capsys, "show", path, *argv)


def test_show_of_a_case_with_a_malformed_schedule_is_exit_2(capsys, tmp_path):
    path, (code, out, err) = show_edited_case(capsys, tmp_path, lambda doc: doc.update(schedule="save7 save6"), "--format", "dot")
    assert (code, out) == (2, "") and err == f"refc show: {path}: schedule: must be a list of node names\n"


@pytest.mark.parametrize("field", ["found_by", "mutant", "schedule"])
def test_show_of_a_case_with_a_lone_surrogate_is_exit_2_not_a_traceback(capsys, tmp_path, field):
    # "\ud800" is valid JSON but no text: drawing it raised UnicodeEncodeError (exit 4)
    def edit(doc):
        doc[field] = ["\ud800", *doc["schedule"]] if field == "schedule" else "x\ud800"

    path, (code, out, err) = show_edited_case(capsys, tmp_path, edit, "--format", "dot")
    where = "schedule[0]" if field == "schedule" else field
    assert (code, out) == (2, "") and err.startswith(f"refc show: {path}: {where}: a string holds a lone UTF-16 surrogate")


def test_show_of_a_case_with_control_characters_draws_them_escaped(capsys, tmp_path):
    # a NUL in found_by made dot reject the text (exit 4); an ESC went out raw
    _, (code, out, err) = show_edited_case(capsys, tmp_path, lambda doc: doc.update(found_by="fuzz\x00\x1b[2J"), "--format", "svg")
    assert code == 0 and "\x1b" not in out and "fuzz\\x00\\x1b[2J" in out


@pytest.mark.parametrize("field", ["schedule", "scheduler_order"])
@pytest.mark.parametrize("order, says", [(["nowhere"] * 100_000, "names no node: 'nowhere', "), (None, "names a node twice: ")])
def test_show_of_a_case_whose_order_names_no_node_or_repeats_one_is_exit_2(capsys, tmp_path, field, order, says):
    # drawn as given before: 100,000 steps of unknown names, or a name with an ESC, went into the DOT
    def edit(doc):
        given = order or doc.pop("schedule") * 2
        doc.pop("schedule", None)
        doc.update({field: given, "scheduler": "topo", "scheduler_seed": 0} if field == "scheduler_order" else {field: given})

    path, (code, out, err) = show_edited_case(capsys, tmp_path, edit, "--format", "dot")
    assert (code, out) == (2, "") and err.startswith(f"refc show: {path}: {field}: {says}") and len(err.splitlines()) == 1


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


PLUGINS = ROOT / "tests/data/plugins"


def _scheduler_case(tmp_path: Path, monkeypatch) -> tuple[Path, list[str]]:
    """A case a wrong scheduler plug-in fails with SCH-1 (found by a campaign),
    with the order the plug-in produced for it (its recorded seed) stored as
    ``scheduler_order``, as the campaign is to store it."""
    from fuzz.campaign import CampaignConfig, run_campaign

    monkeypatch.syspath_prepend(str(PLUGINS))
    flaky_scheduler = importlib.import_module("flaky_scheduler")
    config = CampaignConfig(max_cases=15, chunk_cases=15, seed=0, max_nodes=6, schedulers=("flaky_scheduler:schedule",),
                            budget=None, out=None, stop_on_failure=True, shrink_calls=20, reduce_attempts=30)
    (failure,) = run_campaign(config).found.values()
    doc = dict(failure.case_doc)
    assert failure.signature.invariant == "SCH-1" and doc["scheduler"] == "flaky_scheduler:schedule"
    prepared = prepare(graph_from_doc(doc))
    order = list(flaky_scheduler.schedule(prepared.scheduled, prepared.deps, doc["scheduler_seed"]))
    path = tmp_path / "case.json"
    path.write_text(json.dumps({**doc, "scheduler_order": order}))
    return path, order


def test_show_of_a_scheduler_case_draws_the_order_it_produced_with_the_broken_edge_red(capsys, tmp_path, monkeypatch):
    path, order = _scheduler_case(tmp_path, monkeypatch)
    code, out, err = refc(capsys, "show", path, "--format", "dot")
    assert (code, err) == (0, "")
    pic = read(out)
    labels = [pic.vertices[f"schedule1:{k}"]["label"].split("\n")[0] for k in range(len(order))]
    assert labels == [f"{k + 1}. {n}" for k, n in enumerate(order)]
    red = [(s, d) for s, d, a in pic.edges if s.startswith("graph/") and s != "graph/finding" and a.get("color") == ERROR]
    assert red and all("schedule runs" in a["label"] for s, d, a in pic.edges if (s, d) in red)
    assert "found: SCH-1 at compile by flaky_scheduler:schedule: " in pic.vertices["graph/finding"]["label"].replace("\n", " ")
    assert "the order flaky_scheduler:schedule produced" in out
    # the same case as stored before scheduler_order: the graph alone, nothing red
    old = json.loads(path.read_text())
    del old["scheduler_order"]
    path.write_text(json.dumps(old))
    code, out, err = refc(capsys, "show", path, "--format", "dot")
    assert (code, err) == (0, "") and "schedule1:0" not in out
    assert not [a for s, _, a in read(out).edges if a.get("color") == ERROR and s != "finding"]  # only the recorded finding's note


def test_show_never_imports_the_scheduler_a_case_names(tmp_path):
    # a scheduler module that leaves a mark when imported, on the path of a `refc show` subprocess
    (tmp_path / "trap_scheduler.py").write_text(f"open({str(tmp_path / 'imported')!r}, 'w').close()\ndef schedule(g, d, seed=0):\n    return []\n")
    doc = json.loads((ROOT / "corpus/mutant.sched-drop-save-war.json").read_text())
    doc.pop("schedule", None)
    doc.update(scheduler="trap_scheduler:schedule", scheduler_seed=1, scheduler_order=["save7", "save6"])
    (tmp_path / "case.json").write_text(json.dumps(doc))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(["refc", "show", str(tmp_path / "case.json"), "--format", "dot"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "the order trap_scheduler:schedule produced" in done.stdout and ERROR in done.stdout
    assert not (tmp_path / "imported").exists()


def test_show_of_a_malformed_scheduler_order_is_exit_2(capsys, tmp_path):
    doc = json.loads((ROOT / "corpus/mutant.sched-drop-save-war.json").read_text())
    doc.pop("schedule", None)
    doc["scheduler_order"] = ["save7", 3]
    (tmp_path / "case.json").write_text(json.dumps(doc))
    code, out, err = refc(capsys, "show", tmp_path / "case.json", "--format", "dot")
    assert code == 2 and "scheduler_order" in err and "Traceback" not in err


def test_show_of_a_case_draws_the_finding_it_records_red(capsys, tmp_path):
    finding = {"signature": "SEM-1 at differential by share_buffers", "explanation": "p3 differs\x1b[2J", "nodes": ["save7", "nope"],
               "instruction": 3}
    path, (code, out, err) = show_edited_case(capsys, tmp_path, lambda doc: doc.update(finding=finding), "--format", "dot")
    assert (code, err) == (0, "")
    pic = read(out)
    note = pic.vertices["graph/finding"]["label"].replace("\n", " ")
    assert f"found: SEM-1 at differential by share_buffers: p3 differs\\x1b[2J (IR instruction 3: refc compile {path} --format svg)" in note
    assert pic.vertices["graph/node:save7"].get("color") == ERROR and pic.vertices["graph/node:save6"].get("color") != ERROR
    assert [d for s, d, _ in pic.edges if s == "graph/finding"] == ["graph/node:save7"]  # a name the graph lacks is not drawn
    # a graph without a schedule too; and a malformed record is exit 2 naming the field
    path, (code, out, err) = show_edited_case(capsys, tmp_path, lambda doc: [doc.update(finding=finding), doc.pop("schedule")], "--format", "dot")
    assert code == 0 and "finding" in read(out).vertices
    path, (code, out, err) = show_edited_case(capsys, tmp_path, lambda doc: doc.update(finding={"signature": 3}), "--format", "dot")
    assert (code, out) == (2, "") and f"{path}: finding: expected" in err


def test_show_of_a_target_case_without_a_schedule_says_whose_case_it_is(capsys, tmp_path):
    # it was titled "graph fuzz", as any graph file: no provenance, no target
    target = {"name": "my_target:TARGET", "configurations": ["plain", "fast"], "failing": "fast", "passing": "plain"}
    path, (code, out, err) = show_edited_case(capsys, tmp_path, lambda doc: [doc.pop("schedule"), doc.update(target=target)],
                                              "--format", "dot")
    assert (code, err) == (0, "")
    title = _title(out)
    assert title.startswith("case ") and "found by: " in title and "target my_target:TARGET: fast fails, plain passes" in title
    code, out, err = refc(capsys, "show", EXAMPLES[0], "--format", "dot")
    assert _title(out) == f"graph {EXAMPLES[0].stem}"  # a graph file is no case


def _title(dot: str) -> str:
    """The label of a picture's first ``graph [...]`` line: its title."""
    line = next(line.strip() for line in dot.splitlines() if line.strip().startswith("graph ["))
    return attrs(line[len("graph ["):-len("];")])["label"]


def test_a_cases_long_provenance_is_clipped_in_its_picture(capsys, tmp_path):
    # found_by of 17,000 characters went whole into the DOT label, which dot refuses past 16 KiB (exit 4)
    doc = json.loads((ROOT / "corpus/mutant.share-ignore-later-reads.json").read_text())
    path = tmp_path / "case.json"
    path.write_text(json.dumps({**doc, "found_by": "refc fuzz " + "x" * 17000}))
    code, out, err = refc(capsys, "show", path, "--format", "svg", "-o", tmp_path / "c.svg")
    assert (code, err) == (0, "") and (tmp_path / "c.svg").stat().st_size < 100_000


def test_a_case_schedule_naming_a_node_twice_is_malformed_as_replay_says(capsys, tmp_path):
    doc = json.loads((ROOT / "corpus/example.sgd_momentum.json").read_text())
    first = doc["nodes"][0]["name"]
    path = tmp_path / "case.json"
    path.write_text(json.dumps({**doc, "schedule": [first, first]}))
    code, out, err = refc(capsys, "show", path, "--format", "dot")
    assert (code, out) == (2, "") and err == f"refc show: {path}: schedule: names a node twice: '{first}'\n"
