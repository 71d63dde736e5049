"""Tables for the command line, drawn by ``rich``.

``table_lines`` renders plain columns (no box, two spaces between columns),
so that the output reads the same in a terminal, in a log and in a pipe;
colour is used only when standard output is a terminal. Lines carry no
trailing spaces.
"""

from __future__ import annotations

import io
import sys
from typing import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = ["table_lines"]

# wide enough that rich never wraps a cell: a table here is read as data
_WIDTH = 10_000


def table_lines(
    header: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    right: bool = False,
    indent: int = 0,
) -> list[str]:
    """``rows`` under ``header`` as text lines, one per row (after the header);
    cells right-aligned when ``right`` (numbers), else left-aligned."""
    table = Table(box=None, pad_edge=False, padding=(0, 1))
    for name in header:
        table.add_column(Text(name), justify="right" if right else "left", no_wrap=True, header_style="bold")
    for row in rows:
        table.add_row(*(Text(str(c)) for c in row))  # Text: a cell is never read as rich markup
    terminal = sys.stdout.isatty()
    out = io.StringIO()
    console = Console(file=out, width=_WIDTH, force_terminal=terminal, color_system="auto" if terminal else None, highlight=False)
    console.print(table)
    prefix = " " * indent
    return [prefix + line.rstrip() for line in out.getvalue().splitlines() if line.strip()]
