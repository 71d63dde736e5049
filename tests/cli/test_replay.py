"""``refc replay``: a case file is data; plug-ins run only when allowed, and contained."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.inprocess import refc

ROOT = Path(__file__).resolve().parents[2]
SGD = json.loads((ROOT / "examples" / "sgd_momentum.json").read_text())

# a module in the current directory that leaves a mark when imported
MARKER_MODULE = "import pathlib\npathlib.Path('imported.mark').write_text('x')\ndef passes():\n    return 'O2'\n"


def _write(folder: Path, name: str, **fields) -> Path:
    path = folder / f"{name}.json"
    path.write_text(json.dumps({**SGD, **fields}))
    return path


def test_a_case_naming_a_module_never_imports_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "h8_marker_plugin.py").write_text(MARKER_MODULE)
    cases = tmp_path / "cases"
    cases.mkdir()
    _write(cases, "a_exit", pipeline="sys:exit")
    _write(cases, "b_local", pipeline="h8_marker_plugin:passes")
    _write(cases, "c_wrong", expect={"reject": "OWN-4"})  # runs although plug-in cases come first
    code, out, _ = refc(capsys, "replay", cases)
    assert code == 2
    assert "a_exit.json: needs plug-in sys (a case file is data; replay with --allow-plugin sys" in out
    assert "b_local.json: needs plug-in h8_marker_plugin" in out
    assert "c_wrong.json: regressed: expected reject OWN-4" in out
    assert "3 cases: 0 ok, 1 regressed, 0 malformed, 2 needs plug-in" in out
    assert not (tmp_path / "imported.mark").exists()


def test_an_allowed_plugin_runs_contained(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "h8_marker_plugin.py").write_text(MARKER_MODULE)
    for name, pipeline in [("exit", "sys:exit"), ("fork", "os:fork"), ("stdin", "builtins:input"), ("raise", "json:loads")]:
        _write(tmp_path, name, pipeline=pipeline)
    _write(tmp_path, "local", pipeline="h8_marker_plugin:passes")
    _write(tmp_path, "plain")
    allow = [x for m in ("sys", "os", "builtins", "json", "h8_marker_plugin:passes") for x in ("--allow-plugin", m)]
    code, out, _ = refc(capsys, "replay", *allow, "--plugin-timeout", "60", tmp_path)
    lines = {line.split(".json: ")[0].rsplit("/", 1)[-1]: line for line in out.splitlines() if ".json: " in line}
    assert "regressed: expected pass: error at compile: ExecutionError: pipeline 'sys:exit' called sys.exit(None)" in lines["exit"]
    assert "a plug-in may not fork" in lines["fork"]
    assert "EOFError" in lines["stdin"]  # stdin is closed: input() ends at once, it does not block
    assert "error at compile by json.loads: ExecutionError: pass json.loads raised TypeError" in lines["raise"]
    assert "local.json: ok: pass" in lines["local"] and (tmp_path / "imported.mark").exists()
    assert "plain.json: ok: pass" in lines["plain"]
    assert code == 1 and "6 cases: 2 ok, 4 regressed, 0 malformed, 0 needs plug-in" in out


def test_a_plugin_that_hangs_is_stopped(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "h8_hang.py").write_text("import time\ndef passes():\n    time.sleep(600)\n")
    _write(tmp_path, "hang", pipeline="h8_hang:passes")
    code, out, _ = refc(capsys, "replay", "--allow-plugin", "h8_hang", "--plugin-timeout", "5", tmp_path)
    assert code == 1 and "hang.json: regressed: plug-in h8_hang: no verdict within 5 s" in out


def test_replay_help_describes_the_verdicts(capsys):
    code, out, _ = refc(capsys, "replay", "--help")
    assert code == 0
    for words in ("ok", "regressed", "malformed", "needs plug-in", "--allow-plugin", "kills NAME", "does not kill NAME"):
        assert words in out


def test_a_pass_under_a_scheduler_that_now_orders_otherwise_than_recorded_says_so(tmp_path, capsys):
    # a scheduler whose order depends on a set's iteration order can pass by luck on replay
    doc = json.loads((ROOT / "examples/read_then_save.json").read_text())
    recorded = {**doc, "expect": "pass", "scheduler": "topo", "scheduler_seed": 0}
    for order, note in ((["sum", "late", "s", "save_late"], False), (["late", "sum", "s", "save_late"], True)):
        path = tmp_path / "case.json"
        path.write_text(json.dumps({**recorded, "scheduler_order": order}))
        code, out, err = refc(capsys, "replay", path)
        assert code == 0 and "ok: pass" in out, out + err
        assert ("topo now orders the graph otherwise than when the case was recorded" in out) is note, out


def test_in_a_directory_a_file_past_the_limit_or_no_regular_file_is_one_malformed_verdict(tmp_path, capsys, monkeypatch):
    # an oversized file ended the whole replay (one line, no other verdict); each named pipe waited 30 s
    import os

    (tmp_path / "z.json").write_text((ROOT / "corpus/example.sgd_momentum.json").read_text())
    (tmp_path / "big.json").write_text(" " * 5000)
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    monkeypatch.setenv("REFC_MAX_FILE_BYTES", "4096")
    code, out, err = refc(capsys, "replay", tmp_path)
    lines = out.splitlines()
    assert code == 2 and err == "" and lines[-1] == "replayed 4 cases: 1 ok, 0 regressed, 3 malformed, 0 needs plug-in", out
    assert f"{tmp_path / 'big.json'}: malformed: more than the limit of 4096 bytes" in out
    assert f"{tmp_path / 'pipe.json'}: malformed: not a regular file" in out and f"{tmp_path / 'zero.json'}: malformed: not a regular file" in out


def test_a_campaign_that_found_nothing_replays_as_zero_cases(tmp_path, capsys):
    # a CI step replaying the night's output failed (exit 2, "no case files") on a night with no finding
    out = tmp_path / "nightly"
    (out / "cases").mkdir(parents=True)
    (out / "summary.json").write_text('{"format": "refc-fuzz-summary/1"}')
    (out / "junit.xml").write_text("<testsuites/>")
    code, text, err = refc(capsys, "replay", out)
    assert (code, err) == (0, "") and text == "replayed 0 cases: 0 ok, 0 regressed, 0 malformed, 0 needs plug-in\n"
    code, text, err = refc(capsys, "replay", tmp_path / "nightly" / "cases")  # a plain directory without cases is still refused
    assert code == 2 and "no case files" in err


def test_a_broken_link_is_called_one(tmp_path, capsys):
    # a loop of links was "no such file or directory", a dangling one among the cases "a pipe, a device"
    (tmp_path / "loop1.json").symlink_to("loop2.json")
    (tmp_path / "loop2.json").symlink_to("loop1.json")
    (tmp_path / "dangling.json").symlink_to("nothing.json")
    code, out, err = refc(capsys, "replay", tmp_path / "loop1.json")
    assert code == 2 and err == f"refc replay: {tmp_path / 'loop1.json'}: too many levels of symbolic links\n"
    code, out, err = refc(capsys, "replay", tmp_path / "dangling.json")
    assert code == 2 and err == f"refc replay: {tmp_path / 'dangling.json'}: a link to nothing (no such file or directory)\n"
    code, out, err = refc(capsys, "replay", tmp_path)
    assert code == 2 and f"{tmp_path / 'dangling.json'}: malformed: a link to nothing (or a loop of links), among the cases" in out
