"""The README tells the truth about setup, CI and the command line."""

from __future__ import annotations

import re
from pathlib import Path

from refc.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SETUP = "python3 -m pip install -e . && refc fuzz --budget 60 --seed 1"
TESTS = "bash .ci/system-deps && python3 -m pip install -e '.[test]' && python3 -m pytest"


def code_blocks(text: str) -> list[str]:
    return [m.strip() for m in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.M | re.S)]


def test_readme_has_the_two_setup_commands_as_code_blocks():
    blocks = code_blocks(README)
    assert SETUP in blocks and TESTS in blocks


def test_ci_runs_the_readme_test_command():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert script.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in script
    commands = [line.strip() for line in script.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    steps = TESTS.split(" && ")
    assert all(step in commands for step in steps)
    assert [commands.index(step) for step in steps] == sorted(commands.index(step) for step in steps)


def test_every_registered_command_is_documented():
    for name in COMMANDS:
        assert re.search(rf"^\| `refc {name}\b", README, re.M), name


def test_code_blocks_reads_fenced_blocks_only():
    assert code_blocks("text\n```\na && b\n```\nmore `x`\n```json\n{}\n```\n") == ["a && b", "{}"]


def command_rows() -> dict[str, str]:
    """The command table's first column by command: ``{"bench": "refc bench [--proofs] [--json]", ...}``."""
    rows = re.findall(r"^\| `(refc (\w+)[^`]*)` \|", README, re.M)
    return {name: usage for usage, name in rows}


def test_every_flag_in_the_command_table_exists():
    from refc.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for name, usage in command_rows().items():
        known = {flag for action in sub.choices[name]._actions for flag in action.option_strings}
        for flag in re.findall(r"--[\w-]+", usage):
            assert flag in known, f"README documents {flag} for refc {name}"


def test_the_bench_row_names_every_section():
    from refc.cli.bench import SECTIONS

    usage = command_rows()["bench"]
    assert all(f"--{s.name}" in usage for s in SECTIONS)


def test_every_table_line_is_a_row():
    """A line inside a table that does not start with `|` renders as a stray row
    (the run row once had a leftover `: 0, 1 ..., 2 |` line under it)."""
    for doc in (ROOT / "README.md", ROOT / "docs" / "design.md", ROOT / "HACKING.md"):
        in_table = False
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            if re.match(r"^\|[-| :]+\|$", line):
                in_table = True
            elif not line.strip():
                in_table = False
            elif in_table:
                assert line.startswith("|"), f"{doc.name}:{number}: a line inside a table that is not a row: {line[:60]!r}"


def test_the_target_example_is_a_target_refc_runs_and_finds_wrong(tmp_path, monkeypatch, capsys):
    """The README's `my_target.py` follows the target protocol: `refc run --target`
    runs both its configurations and reports the planted bug as TGT-2 (exit 1)."""
    from tests.cli.inprocess import refc

    block = next(b for b in re.findall(r"```python\n(.*?)```", README, re.S) if b.startswith("# my_target.py"))
    (tmp_path / "my_target.py").write_text(block)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, _ = refc(capsys, "run", ROOT / "examples" / "read_then_save.json", "--target", "my_target:TARGET")
    assert code == 1 and "deferred:" in out and "eager:" in out, out
    assert "TGT-2 configs: 'out' after run 1: eager differs from deferred" in out, out
