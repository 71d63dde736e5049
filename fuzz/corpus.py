"""Corpus cases (DESIGN §10): a graph document plus how to check it.

A case file is a ``refc-graph/1`` document with these extra top-level fields:

- ``"expect"``: ``"pass"`` (the compiler must agree with the reference under
  every schedule checked) or ``{"reject": "OWN-2"}`` (the verifier must reject
  the graph with that invariant id). A plain graph file has no ``expect`` and
  is read as ``"pass"``.
- ``"schedule"`` (optional): node names in order. Without it, the oracle
  checks the standard set of schedules (``fuzz.schedules.case_schedules``).
- ``"pipeline"`` (optional, default ``"O2"``): the optimised pipeline,
  checked beside ``O0``.
- ``"inputs"`` (optional): ``{storage: value}`` overriding initial values of
  placeholders and owned variables; a value is nested lists or
  ``{"seed": n}`` (integers also take ``"low"``/``"high"``).
- ``"found_by"``, ``"mutant"``: provenance (free text; the mutant the case
  was found against, or null).

Loading goes through ``refcompiler.graph_json.graph_from_doc``, which keeps
the extra fields in ``graph.meta``; ``fuzz.case.case_from_doc`` reads them
from there. The ``Case`` type itself lives in ``fuzz.case``.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any, Iterable

from refcompiler.errors import MalformedInput
from refcompiler.graph_json import read_json, write_atomic

from fuzz.case import Case, case_from_doc, case_to_doc
from fuzz.oracle import Finding, check_case

__all__ = [
    "load_case",
    "write_case",
    "format_case_doc",
    "write_text_atomic",
    "case_files",
    "not_a_case_file",
    "is_campaign_dir",
    "replay",
]

# what ``refc fuzz --out DIR`` writes beside ``DIR/cases/`` after every chunk
CAMPAIGN_FILES = ("summary.json", "junit.xml")


def load_case(path: str | os.PathLike[str]) -> Case:
    return case_from_doc(read_json(path), path=str(path))


def format_case_doc(doc: dict[str, Any]) -> str:
    """A case document as text in the style of ``examples/``: top-level fields
    one per line, one line per storage entry and per node. Valid JSON."""
    lines = []
    for key, value in doc.items():
        if key in ("storage", "nodes") and isinstance(value, list) and value:
            items = ",\n  ".join(json.dumps(v) for v in value)
            lines.append(f"{json.dumps(key)}: [\n  {items}]")
        else:
            lines.append(f"{json.dumps(key)}: {json.dumps(value)}")
    return "{" + ",\n ".join(lines) + "}\n"


def write_text_atomic(path: str | os.PathLike[str], text: str, *, root: str | os.PathLike[str] | None = None) -> None:
    """Write ``text`` (UTF-8) through ``refcompiler.graph_json.write_atomic``
    (``root``: the output directory no link inside of which is followed)."""
    write_atomic(path, lambda f: f.write(text.encode("utf-8")), root=root)


def write_case(path: str | os.PathLike[str], case: Case) -> None:
    """Write ``case`` (``format_case_doc``) atomically."""
    write_text_atomic(path, format_case_doc(case_to_doc(case)))


def case_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The case files ``paths`` name: a file as it is, a directory's ``*.json``
    files (recursively, sorted). A campaign's output directory met on the way
    (``is_campaign_dir``), the directory given included, stands for its
    ``cases/`` only: its summary, its ``inconclusive/`` cases (no findings), its
    bug folders and the outputs of earlier campaigns moved into it are not cases. A path that does not exist is a
    ``MalformedInput``."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(_directory_cases(p))
        elif p.exists():
            out.append(p)
        else:
            raise MalformedInput(_missing(p), path=str(p))
    return out


def not_a_case_file(path: Path) -> str | None:
    """Why ``path``, met among the cases of a directory (not named by the
    user), is not read, or ``None`` when it is a regular file: a pipe would be
    waited for and a device read for ever. ``refc replay`` and the pytest
    plugin call such a case malformed."""
    if path.is_file():
        return None
    if path.is_symlink() and not path.exists():
        return "a link to nothing (or a loop of links), among the cases"
    return "not a regular file (a pipe, a device, or a link to one, among the cases)"


def _missing(p: Path) -> str:
    """Why ``p``, which does not resolve to a file, is not there: a link that
    names nothing, a loop of links, or nothing at all."""
    try:
        p.stat()
    except OSError as e:
        if p.is_symlink() and e.errno == errno.ENOENT:
            return "a link to nothing (no such file or directory)"
        return e.strerror.lower() if e.strerror else str(e)
    return "no such file or directory"


def is_campaign_dir(path: Path) -> bool:
    """Whether ``path`` is the output directory of a ``refc fuzz`` campaign
    (it holds the ``CAMPAIGN_FILES``)."""
    return all((path / name).is_file() for name in CAMPAIGN_FILES)


def _directory_cases(root: Path) -> list[Path]:
    found: list[Path] = []
    for where, dirs, files in os.walk(root):
        here = Path(where)
        if is_campaign_dir(here):
            dirs[:] = []
            found.extend((here / "cases").rglob("*.json"))
            continue
        found.extend(here / f for f in files if f.endswith(".json"))
    return sorted(found)


def replay(case: Case, *, mutant: str | None = None) -> Finding | None:
    """Check ``case`` as the corpus does and return the first finding, or
    ``None`` when it meets its expectation: a ``reject`` case must be rejected
    with its id; a ``pass`` case must pass under its schedule (or, without
    one, the standard set of schedules), ``O0`` and its pipeline."""
    return check_case(case, mutant=mutant).finding
