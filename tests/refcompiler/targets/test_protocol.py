"""A user's target that does not keep the protocol (``refcompiler.targets.base.Target``)
is bad usage naming the target and what it did, found when it is resolved:
never a traceback, an exit with its own code, or a campaign that compares nothing."""

from __future__ import annotations

import pytest

from refc.cli import main
from refcompiler.errors import UsageError
from refcompiler.targets import resolve_target

FAKE = "tests.refcompiler.targets.fake_targets:"

BROKEN = {
    "MISSING_RAISES": r"'s missing\(\) raised RuntimeError: planted",
    "MISSING_EXITS": r"'s missing\(\) called sys.exit\(3\)",
    "MISSING_NOT_TEXT": r"missing\(\) returned 5; it returns None or the name of the package it lacks",
    "CONFIGURATIONS_RAISE": r"'s configurations\(\) raised RuntimeError: planted",
    "CONFIGURATIONS_NONE": r"configurations\(\) returned None; it returns a tuple",
    "CONFIGURATIONS_EMPTY": r"configurations\(\) returned none; a target has at least one",
    "CONFIGURATIONS_GENERATOR": r"configurations\(\) returned <generator",
    "CONFIGURATIONS_OF_TEXT": r"configurations\(\) returned 'a', which has no string key",
    "CONFIGURATIONS_REPEATED": r"configurations\(\) returned the key 'a' more than once",
    "NAME_RAISES": r"reading its 'name' raised RuntimeError",
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_target_breaking_the_protocol_is_bad_usage_naming_it(name):
    with pytest.raises(UsageError, match=BROKEN[name]) as e:
        resolve_target(FAKE + name)
    assert FAKE + name in str(e.value)


def test_the_commands_say_so_in_one_line_exit_2(capsys, tmp_path):
    graph = "examples/sgd_momentum.json"
    assert main(["run", graph, "--target", FAKE + "CONFIGURATIONS_RAISE"]) == 2
    assert main(["fuzz", "--target", FAKE + "MISSING_EXITS", "--max-cases", "2", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "configurations() raised RuntimeError" in err[0] and "sys.exit(3)" in err[1]


def test_a_target_keeping_the_protocol_resolves():
    assert resolve_target(FAKE + "REFERENCE").name == "reference"
