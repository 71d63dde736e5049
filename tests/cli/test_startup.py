"""What ``refc`` loads before it does anything (``refc.cli``'s docstring).

Each command runs in a fresh interpreter, which then lists the heavy
packages it loaded: ``refc --help`` and a usage error need none of them, and
``refc check`` only what checking a graph needs. Every start builds every
command's parser, so importing every command module must load none either.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SGD = "corpus/example.sgd_momentum.json"
HEAVY = ("numpy", "networkx", "z3", "rich", "hypothesis", "jsonschema")

# runs refc in this interpreter, then prints which of HEAVY (and of argv[1:]) it loaded
_PROBE = """
import json, sys
from refc.cli import main
watched, argv = json.loads(sys.argv[1])
try:
    main(argv)
except SystemExit:
    pass
sys.stdout.flush()
print("\\nloaded:", json.dumps(sorted(m for m in watched if m in sys.modules)))
"""


def loaded(argv: list[str], watched: tuple[str, ...] = HEAVY) -> list[str]:
    """The modules of ``watched`` that ``refc argv`` loads, in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps([watched, argv])],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    last = done.stdout.rstrip().splitlines()[-1]
    assert last.startswith("loaded: "), done.stdout + done.stderr
    return json.loads(last.removeprefix("loaded: "))


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["fuzz", "--help"], ["validate", "--help"], ["check"], ["compile", SGD, "--bogus"]],
                         ids=" ".join)
def test_help_and_usage_errors_load_nothing_heavy(argv):
    assert loaded(argv) == []


def test_version_is_the_installed_packages():
    from importlib import metadata

    done = subprocess.run([sys.executable, "-m", "refc", "--version"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"refc {metadata.version('refc')}\n", "")


def test_check_loads_what_checking_a_graph_needs_only():
    # networkx is for a graph with a cycle, jsonschema for wording a malformed file's message
    watched = ("z3", "rich", "hypothesis", "networkx", "jsonschema", "refcompiler.pictures.graph", "refcompiler.driver", "fuzz.oracle")
    assert loaded(["check", SGD], watched) == []


def test_check_loads_networkx_for_a_cycle_and_jsonschema_for_a_malformed_file(tmp_path):
    doc = json.loads((ROOT / SGD).read_text())
    cyclic = {"format": doc["format"], "storage": doc["storage"], "nodes": [
        {"name": "a", "op": "relu", "inputs": ["b"]}, {"name": "b", "op": "relu", "inputs": ["a"]}]}
    (tmp_path / "cycle.json").write_text(json.dumps(cyclic))
    (tmp_path / "bad.json").write_text(json.dumps({"format": doc["format"], "nodes": [{"name": "a"}]}))
    assert loaded(["check", str(tmp_path / "cycle.json")], ("networkx", "jsonschema")) == ["networkx"]
    assert loaded(["check", str(tmp_path / "bad.json")], ("networkx", "jsonschema")) == ["jsonschema"]


def test_show_and_compile_load_no_z3_rich_or_hypothesis():
    watched = ("z3", "rich", "hypothesis", "fuzz.oracle")
    assert loaded(["show", SGD], watched) == []
    assert loaded(["compile", SGD], watched) == []


def test_no_command_module_imports_anything_heavy_at_its_top():
    """``refc.cli.tables`` is where rich is; the commands import it when they print a table."""
    probe = (
        "import importlib, pkgutil, sys, refc.cli\n"
        "for m in pkgutil.iter_modules(refc.cli.__path__):\n"
        "    if m.name not in ('tables', '__main__'):\n"
        "        importlib.import_module('refc.cli.' + m.name)\n"
        f"print(sorted(h for h in {HEAVY!r} if h in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_the_scheduler_names_in_help_are_the_schedulers():
    from refc.cli.common import BUILT_IN_SCHEDULERS
    from refcompiler.schedulers import SCHEDULERS

    assert BUILT_IN_SCHEDULERS == tuple(SCHEDULERS)
