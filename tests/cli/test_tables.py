"""``refc.cli.tables``: plain columns through rich, readable in a pipe."""

from __future__ import annotations

from refc.cli.mutants import _score_table
from refc.cli.prove import side_by_side
from refc.cli.tables import table_lines


def test_columns_line_up_without_colour_or_trailing_spaces():
    lines = table_lines(["nodes", "z3 s"], [[10, "0.004"], [10000, "[bold]x"]], right=True, indent=2)
    assert lines == ["  nodes     z3 s", "     10    0.004", "  10000  [bold]x"]  # markup stays text
    assert all("\x1b" not in line and line == line.rstrip() for line in lines)


def test_side_by_side_numbers_the_steps_and_stars_the_pair():
    lines = side_by_side((("a", "b", "c"), ("b", "a", "c")), marked={"a", "b"})
    assert [line.split() for line in lines] == [
        ["schedule", "1", "schedule", "2"],
        ["1", "a", "*", "b", "*"],
        ["2", "b", "*", "a", "*"],
        ["3", "c", "c"],
    ]
    assert lines[1].index("b *") == lines[0].index("schedule 2")


def test_the_score_table_has_a_row_per_mutant():
    row = {"name": "m", "kills": 1, "campaigns": 1, "seconds_to_kill": 1.234, "shrunk_nodes": 3, "shrunk_nodes_max": 4, "signature": "IR-4/execute"}
    survivor = {"name": "s", "kills": 0, "campaigns": 2, "seconds_to_kill": None, "shrunk_nodes": None, "shrunk_nodes_max": None, "signature": None}
    header, first, second = _score_table([row, survivor])
    assert header.split() == ["mutant", "killed", "seconds", "to", "kill", "(median)", "shrunk", "nodes", "(median,", "max)", "signature"]
    assert first.split() == ["m", "1/1", "1.23", "3,", "4", "IR-4/execute"]
    assert second.split() == ["s", "0/2", "-", "-", "-"]
