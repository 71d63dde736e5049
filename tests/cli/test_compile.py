"""``refc compile``: the IR text with operand kinds, offsets and peak bytes; exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from refc.cli import COMMANDS
from refcompiler.graph_json import load_graph
from refcompiler.ir import Opcode
from refcompiler.ir_text import parse_program
from tests.cli.inprocess import refc

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))




def test_compile_is_a_command() -> None:
    assert "compile" in COMMANDS


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_prints_operand_kinds_offsets_and_peak(capsys, path: Path) -> None:  # type: ignore[no-untyped-def]
    code, out, err = refc(capsys, "compile", path, "--pipeline", "O0")
    assert code == 0 and err == ""
    program = parse_program(out)  # the output is the canonical text form
    assert program.peak_bytes is not None and f"peak_bytes {program.peak_bytes}\n" in out
    graph = load_graph(path)
    for node in graph.nodes:
        if node.state:
            (kernel,) = [i for i in program.instrs if i.opcode is Opcode.KERNEL and i.name == node.name]
            line = next(l for l in out.splitlines() if f"kernel  {node.name} = " in l)
            for state in node.state:
                assert f"@inout {state}" in line
            assert len(kernel.operands) == len(node.inputs) + len(node.spec.results) + len(node.state)
    for name, offset in program.offsets:
        assert f"alloc   {name} : " in out and f" at {offset}" in out


def test_options_reach_the_driver(capsys) -> None:  # type: ignore[no-untyped-def]
    path = ROOT / "examples" / "sgd_momentum.json"
    code, out, _ = refc(capsys, "compile", path, "--pipeline", "O2", "--schedule", "random", "--seed", "3")
    assert code == 0
    program = parse_program(out)
    assert program.passes and "share_buffers" in program.passes
    _, again, _ = refc(capsys, "compile", path, "--pipeline", "O2", "--scheduler", "random", "--seed", "3")
    assert again == out
    code, out, _ = refc(capsys, "compile", path, "--scheduler", "refcompiler.schedulers.memory:memory_schedule")
    assert code == 0 and parse_program(out).schedule


def test_an_invalid_graph_is_a_finding(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "two_saves.json"
    bad.write_text(
        '{"format": "refc-graph/1", "storage": [{"name": "A", "kind": "placeholder", "dtype": "float32", "shape": [2]}],'
        ' "nodes": [{"name": "r", "op": "relu", "inputs": ["A"]},'
        ' {"name": "s1", "op": "save", "inputs": ["r"], "attrs": {"target": "A"}},'
        ' {"name": "s2", "op": "save", "inputs": ["r"], "attrs": {"target": "A"}}]}'
    )
    code, out, err = refc(capsys, "compile", bad)
    assert code == 1 and out == "" and "OWN-4" in err and "Traceback" not in err
    # asked for a picture: none can be drawn before a program is made, and it says so
    code, out, err = refc(capsys, "compile", bad, "--format", "svg", "-o", tmp_path / "p.svg")
    assert code == 1 and "nothing drawn: OWN-4 is found before a program is made" in err and not (tmp_path / "p.svg").exists()


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["examples/nope.json"], "no such file"),
        (["examples/read_then_save.json", "--scheduler", "bogus"], "unknown scheduler 'bogus'"),
        (["examples/read_then_save.json", "--pipeline", "O7"], "unknown pass 'O7'"),
        (["examples/read_then_save.json", "--mutant", "no-such-mutant"], "unknown mutant"),
        (["examples/read_then_save.json", "--seed", "-1"], "needs 0 or more"),
    ],
)
def test_bad_usage_is_exit_2(capsys, argv: list[str], needle: str) -> None:  # type: ignore[no-untyped-def]
    code, out, err = refc(capsys, "compile", *[str(ROOT / a) if a.startswith("examples/") else a for a in argv])
    assert code == 2 and needle in err and "Traceback" not in err


def test_the_console_script_prints_the_ir() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "refcompiler", "compile", str(ROOT / "examples" / "quantization_profile.json")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "@inout minmax, @inout hist" in done.stdout and "peak_bytes" in done.stdout


def test_o2_keeps_state_inout_and_lowers_the_peak_where_sharing_applies(capsys) -> None:  # type: ignore[no-untyped-def]
    peaks = {}
    for path in EXAMPLES:
        for pipeline in ("O0", "O2"):
            code, out, _ = refc(capsys, "compile", path, "--pipeline", pipeline)
            assert code == 0
            for node in load_graph(path).nodes:
                if node.state:
                    line = next(l for l in out.splitlines() if f"kernel  {node.name} = " in l)
                    assert all(f"@inout {s}" in line for s in node.state), (pipeline, line)
            peaks[path.stem, pipeline] = parse_program(out).peak_bytes
    lower = [stem for stem, pipeline in peaks if pipeline == "O2" and peaks[stem, "O2"] < peaks[stem, "O0"]]
    assert "embedding_update" in lower, peaks


FREE_EARLY = '''
from refcompiler.ir import Opcode

def free_early(program):
    """Moves every dealloc to just after its alloc: the IR verifier must refuse it."""
    out = []
    deallocs = {i.name: i for i in program.instrs if i.opcode is Opcode.DEALLOC}
    for i in program.instrs:
        if i.opcode is Opcode.DEALLOC:
            continue
        out.append(i)
        if i.opcode is Opcode.ALLOC and i.name in deallocs:
            out.append(deallocs[i.name])
    return program.with_instrs(out)

PIPELINE = [free_early]
'''


def test_a_picture_asked_for_when_a_pass_breaks_the_ir_is_of_that_ir_with_the_fault(capsys, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from tests.refcompiler.pictures.dot_reader import read

    (tmp_path / "h_free_early.py").write_text(FREE_EARLY)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = ROOT / "examples" / "sgd_momentum.json"
    code, out, err = refc(capsys, "compile", path, "--pipeline", "h_free_early:PIPELINE", "--allow-plugin", "h_free_early", "--format", "dot")
    assert code == 1 and "after pass h_free_early.free_early: IR-1" in err
    pic = read(out)
    (marked,) = [v for v, a in pic.vertices.items() if a.get("penwidth") == "3"]
    assert pic.edges_between("fault", marked) and "after pass h_free_early.free_early: IR-1" in pic.vertices["fault"]["label"].replace("\n", " ")
    # text output: no picture, the error as before
    code, out, err = refc(capsys, "compile", path, "--pipeline", "h_free_early:PIPELINE", "--allow-plugin", "h_free_early")
    assert code == 1 and out == "" and "IR-1" in err


def test_an_arena_picture_of_an_allocation_that_breaks_mem1(capsys, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "h_free_early.py").write_text(FREE_EARLY)
    monkeypatch.syspath_prepend(str(tmp_path))
    out_file = tmp_path / "arena.svg"
    path = ROOT / "examples" / "sgd_momentum.json"
    code, out, err = refc(capsys, "compile", path, "--mutant", "alloc-early-free", "--format", "svg", "--picture", "arena", "-o", out_file)
    assert code == 1 and "MEM-1" in err and out == ""
    svg = out_file.read_text()
    assert svg.count('stroke="#c62828" stroke-width="3"') == 2 and "overlap while both are live" in svg
    # asked for the arena of a fault found before allocation: the IR is drawn instead, and said so
    code, out, err = refc(capsys, "compile", path, "--pipeline", "h_free_early:PIPELINE", "--allow-plugin", "h_free_early",
                          "--format", "svg", "--picture", "arena", "-o", out_file)
    assert code == 1 and "drawing the IR instead of the arena" in err and "IR-1" in err
    assert "free_early" in out_file.read_text() and "instruction index" not in out_file.read_text()


def test_print_after_shows_the_ir_each_stage_left_on_stderr(capsys, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from refcompiler.passes import PIPELINES

    path = ROOT / "examples" / "sgd_momentum.json"
    _, plain, _ = refc(capsys, "compile", path, "--pipeline", "O2")
    code, out, err = refc(capsys, "compile", path, "--pipeline", "O2", "--print-after-all")
    assert code == 0 and out == plain  # stdout: the compiled program as before
    heads = [line for line in err.splitlines() if line.startswith("; IR after")]
    assert [h.split(":")[0] for h in heads] == ["; IR after lowering", *(f"; IR after pass {p}" for p in PIPELINES["O2"])]
    # each printed program is the text form of what that stage returned
    lowered = err.split("; IR after lowering\n")[1].split("; IR after pass")[0]
    assert parse_program(lowered).instrs and "share" not in lowered
    code, out, err = refc(capsys, "compile", path, "--pipeline", "O2", "--print-after", "share_buffers")
    assert code == 0 and [l for l in err.splitlines() if l.startswith("; IR")] == ["; IR after pass share_buffers"]
    # a name no stage of the pipeline has could never print: a usage error, before compiling
    code, out, err = refc(capsys, "compile", path, "--pipeline", "O2", "--print-after", "share_buffers", "--print-after", "nope")
    assert code == 2 and out == "" and "; IR" not in err
    assert "--print-after nope: no stage of pipeline O2 has that name (stages: lowering, dead_store_elimination," in err
    # a user's pass that breaks the IR: what it returned, then the violation
    (tmp_path / "h_free_early.py").write_text(FREE_EARLY)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, err = refc(capsys, "compile", path, "--pipeline", "h_free_early:PIPELINE", "--allow-plugin", "h_free_early",
                          "--print-after", "h_free_early.free_early")
    assert code == 1 and err.index("; IR after pass h_free_early.free_early\n") < err.index("after pass h_free_early.free_early: IR-1")
    # a pass of the pipeline that never ran (the one before it broke the IR) is said so
    code, out, err = refc(capsys, "compile", path, "--pipeline", "h_free_early:PIPELINE,share_buffers", "--allow-plugin",
                          "h_free_early", "--print-after", "share_buffers")
    assert code == 1 and "--print-after share_buffers: no such stage ran (stages: lowering, h_free_early.free_early)" in err


def test_print_after_of_a_program_the_text_form_cannot_hold(capsys, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "h_junk.py").write_text("def junk(program):\n    return program.with_instrs([*program.instrs, 7])\nPIPELINE = [junk]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, err = refc(capsys, "compile", ROOT / "examples" / "sgd_momentum.json", "--pipeline", "h_junk:PIPELINE",
                          "--allow-plugin", "h_junk", "--print-after-all")
    assert code == 1 and "; IR after pass h_junk.junk\n; (this program cannot be printed: " in err
    assert "after pass h_junk.junk: IR-1: the pass returned a program whose instruction " in err
