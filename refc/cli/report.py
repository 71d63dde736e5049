"""``refc report OUT_DIR [-o FILE]``: one self-contained HTML page for a campaign.

Reads what ``refc fuzz --out OUT_DIR`` wrote (``summary.json``, format
``refc-fuzz-summary/1``, and the shrunk cases under ``cases/``) and writes
``OUT_DIR/report.html`` (or ``FILE``): the summary, throughput over time,
each distinct finding with its explanation, picture (inline SVG, when
Graphviz's ``dot`` is installed), case and one-line replay command (and, for
one that did not reproduce when replayed, why), and what the symbolic stage
left inconclusive (not findings: the count, and each case kept with its
``refc validate`` command). The page
needs no network to view. The summary is read defensively: a field it lacks
is shown as missing, a field it gains is ignored; but its format must be
``refc-fuzz-summary/1`` and its ``signatures`` a list of objects (a page
saying "nothing failed" of a summary it could not read would mislead). Exit 0
(the page was written); 2 when OUT_DIR is no campaign output, its summary is
not one this refc reads, or the page cannot be written.
A case that cannot be read is reported on the page, not fatal.
"""

from __future__ import annotations

import argparse
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from refc.cli.common import file_path, out_file
from refc.cli.picture import allow_flags, drawing
from refcompiler.errors import MalformedInput, RefCompilerError, UsageError
from refcompiler.files import read_json, write_atomic
from refcompiler.limits import shown
from refcompiler.pictures.render import DOT_SECONDS, INSTALL_HINT, PictureFormat, have_dot, render

if TYPE_CHECKING:
    from refcompiler.pictures.report import FindingView, UnsettledView

__all__ = ["register", "run", "MAX_FILE_BYTES", "MAX_FINDINGS", "MAX_PICTURE_NODES", "PICTURE_SECONDS", "MAX_CASE_BYTES", "MAX_SHOWN_CASE_BYTES"]

SUMMARY_FORMAT = "refc-fuzz-summary/1"  # = fuzz.campaign.summary.SUMMARY_FORMAT (not imported: the page needs no campaign code)
MAX_FILE_BYTES = 8 << 20  # a summary or a case larger than this is not one refc wrote
MAX_FINDINGS = 200  # findings shown on one page
MAX_PICTURE_NODES = 300  # a bigger case is listed without a picture (layout time)
PICTURE_SECONDS = 120.0  # layout time for one page's pictures in all (200 layouts of up to 60 s each were hours)
MAX_CASE_BYTES = 32 << 20  # case files read for one page in all (200 of 8 MiB were minutes of parsing and a 1.6 GB page)
MAX_SHOWN_CASE_BYTES = 1 << 20  # a larger case is named on the page, not copied into it


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write a campaign's output directory as one self-contained HTML page")
    p.add_argument("out_dir", metavar="OUT_DIR", type=file_path, help="a directory `refc fuzz --out` wrote")
    p.add_argument("-o", "--output", type=file_path, metavar="FILE", default=None, help="the page to write (default OUT_DIR/report.html)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from refcompiler.pictures.charts import finite_number
    from refcompiler.pictures.report import campaign_html

    out = Path(args.out_dir)
    summary = read_summary(out)
    entries = summary.get("signatures", [])  # a list of objects (``read_summary``)
    if args.output is not None:  # before any work: the page replaces none of the files it is made of
        cases = (_case_path(out, e) for e in entries[:MAX_FINDINGS])
        out_file(args.output, reads=[str(out / "summary.json"), *(str(c) for c in cases if c is not None)])
    notes = [] if have_dot() else [f"no pictures: Graphviz's dot program is not installed ({INSTALL_HINT})"]
    if len(entries) > MAX_FINDINGS:
        notes.append(f"showing the first {MAX_FINDINGS} of {len(entries)} findings")
    budget = Budget(time.monotonic() + PICTURE_SECONDS, MAX_CASE_BYTES)
    findings = [finding_view(out, e, summary.get("mutant"), budget) for e in entries[:MAX_FINDINGS]]
    found_at = [t for t in (finite_number(e.get("seconds_to_find")) for e in entries) if t is not None]
    page = campaign_html(f"refc fuzz campaign: {out}", summary, findings, found_at, notes, unsettled_view(out, summary.get("symbolic_inconclusive")))
    target = Path(args.output) if args.output is not None else out / "report.html"
    # the default page is inside a campaign directory, which may come from elsewhere (a
    # CI artifact): a link planted there as report.html is not followed, as in refc fuzz
    root = out if args.output is None else None
    try:
        write_atomic(target, lambda f: f.write(page.encode("utf-8")), root=root)
    except OSError as e:
        raise UsageError(f"cannot write {target}: {e.strerror or e}") from None
    print(f"refc report: wrote {target} ({len(findings)} finding{'' if len(findings) == 1 else 's'})")
    return 0


def _with_path(entry: dict[str, Any], command: str) -> str:
    """``command`` after the ``PYTHONPATH=FOLDERS`` the campaign's own replay
    command (the summary's ``replay``) starts with, if it does: the folders its
    plug-in modules were found in. Shown on the page, never run."""
    given = entry.get("replay")
    try:
        first = shlex.split(given)[0] if isinstance(given, str) and given.startswith("PYTHONPATH=") else None
    except (ValueError, IndexError):  # not a command line refc wrote
        first = None
    return f"PYTHONPATH={shlex.quote(first.partition('=')[2])} {command}" if first else command


def unsettled_view(out: Path, doc: Any) -> UnsettledView | None:
    """What the page shows of a summary's ``symbolic_inconclusive`` (the programs
    the symbolic stage neither proved nor refuted: not findings), read as
    defensively as the rest: ``None`` when the summary has none to show."""
    from refcompiler.pictures.report import UnsettledView

    if not isinstance(doc, dict) or not isinstance(doc.get("programs"), int) or doc["programs"] <= 0:
        return None
    rows = []
    for entry in doc.get("kept", []) if isinstance(doc.get("kept"), list) else []:
        if not isinstance(entry, dict):
            continue
        where = f"pipeline {entry.get('pipeline', '-')}, {entry.get('schedule') or 'no schedule'}"
        at = f" (first at {entry['difference']})" if entry.get("difference") else ""
        case = entry.get("case")
        rows.append((where, f"{entry.get('reason', '-')}{at}", str(out / case) if isinstance(case, str) else "-", str(entry.get("validate") or "-")))
    cases = doc.get("cases")
    return UnsettledView(doc["programs"], cases if isinstance(cases, int) else None, tuple(rows))


def _bounded(path: Path) -> None:
    """A campaign file refc may read whole: a regular file (a named pipe inside the
    directory would block the report for ever) of at most ``MAX_FILE_BYTES``."""
    if path.exists() and not path.is_file():
        raise MalformedInput("not a regular file (a campaign writes only regular files)", path=str(path))
    if path.is_file() and path.stat().st_size > MAX_FILE_BYTES:
        raise MalformedInput(f"larger than {MAX_FILE_BYTES >> 20} MiB, too large for a campaign file", path=str(path))


def read_summary(out: Path) -> dict[str, Any]:
    """``out/summary.json`` as a dict; exit 2 (one line) unless it is a campaign summary."""
    if not out.is_dir():
        raise UsageError(f"{out}: not a directory (give the --out directory of a refc fuzz campaign)")
    path = out / "summary.json"
    if not path.is_file():
        raise UsageError(f"{out}: no summary.json here: not the output directory of a refc fuzz campaign")
    _bounded(path)
    doc = read_json(path)
    if not isinstance(doc, dict) or not str(doc.get("format", "")).startswith(SUMMARY_FORMAT.rpartition("/")[0]):
        raise MalformedInput(f"not a campaign summary (expected format {SUMMARY_FORMAT})", path=str(path), field="format")
    if doc["format"] != SUMMARY_FORMAT:
        raise MalformedInput(f"{shown(doc['format'])} is a summary format this refc does not read (it reads {SUMMARY_FORMAT})", path=str(path), field="format")
    found = doc.get("signatures", [])
    if not isinstance(found, list):
        raise MalformedInput("expected a list of findings", path=str(path), field="signatures")
    for k, entry in enumerate(found):
        if not isinstance(entry, dict):
            raise MalformedInput("expected a finding (an object)", path=str(path), field=f"signatures[{k}]")
    return doc


def _case_path(out: Path, entry: dict[str, Any]) -> Path | None:
    """The case file of a finding, only inside ``out`` (a summary is data: it
    may not point the report at other files)."""
    case = entry.get("case")
    if not isinstance(case, str) or not case or "\0" in case:
        return None
    try:
        path = (out / case).resolve()
    except (OSError, RuntimeError):  # a name too long, a loop of links
        return None
    return path if path.is_relative_to(out.resolve()) else None


@dataclass
class Budget:
    """What one page may still spend: layout until ``deadline``
    (``time.monotonic``), and ``case_bytes`` of case files to read."""

    deadline: float
    case_bytes: int


def finding_view(out: Path, entry: dict[str, Any], mutant: Any, budget: Budget) -> FindingView:
    """What the page shows of one summary entry; a missing or malformed case
    gives a view that says so. Its case is read only within the page's
    ``budget`` of bytes, and shown only when it is small; its picture is laid
    out only before the budget's deadline; one that cannot be drawn is noted
    beside the case."""
    from refcompiler.graph_json import load_graph
    from refcompiler.pictures.report import FindingView

    facts = [
        (label, str(entry[key]))
        for key, label in (("nodes", "nodes after shrinking"), ("nodes_before_reduction", "nodes before reduction"),
                           ("seconds_to_find", "seconds to find"), ("reproduces", "reproduces on replay"),
                           ("passes_without_mutant", "passes without the mutant"))
        if entry.get(key) is not None  # e.g. passes_without_mutant of a campaign without one
    ]
    why = entry.get("reproduces_reason")
    if entry.get("reproduces") is False and why:  # what replaying found instead, beside the False
        facts = [(label, f"{value} ({why})" if label == "reproduces on replay" else value) for label, value in facts]
    title = str(entry.get("text") or entry.get("signature") or "a finding")
    explanation = str(entry.get("explanation", ""))
    path = _case_path(out, entry)
    if path is None:
        return FindingView(title, explanation, tuple(facts), "-", "", None, f"the summary names no case file inside {out}")
    words = ["refc", "replay", str(out / str(entry["case"]))] + (["--mutant", mutant] if isinstance(mutant, str) and mutant else [])
    replay = shlex.join(words)
    try:
        _bounded(path)
        size = path.stat().st_size if path.is_file() else 0
        if size > budget.case_bytes:
            return FindingView(title, explanation, tuple(facts), replay, "", None,
                               f"the case {path} is not read: the page's {MAX_CASE_BYTES >> 20} MiB of case files are spent")
        budget.case_bytes -= size
        case_text = path.read_text(encoding="utf-8")
        graph = load_graph(path)
        # a case naming the user's scheduler, pipeline or target replays only with its module allowed
        replay = _with_path(entry, shlex.join(words + allow_flags(path)))
        picture, note = _picture(graph, str(path), budget.deadline)
        if len(case_text) > MAX_SHOWN_CASE_BYTES:
            case_text = f"(the case, {size} bytes, is not copied into the page: it is {path})"
    except (OSError, UnicodeDecodeError) as e:
        return FindingView(title, explanation, tuple(facts), replay, "", None, f"cannot read the case {path}: {e}")
    except RefCompilerError as e:
        return FindingView(title, explanation, tuple(facts), replay, "", None, f"the case cannot be drawn: {e}")
    return FindingView(title, explanation, tuple(facts), replay, case_text, picture, note)


def _picture(graph, path: str, deadline: float) -> tuple[str | None, str]:
    """The case's picture as inline SVG, or ``None`` and why not. Raises what
    drawing a malformed case raises (its order naming unknown nodes)."""
    if not have_dot():
        return None, f"no picture: {INSTALL_HINT}"
    if len(graph.nodes) > MAX_PICTURE_NODES:
        return None, f"no picture: the case has {len(graph.nodes)} nodes (pictures stop at {MAX_PICTURE_NODES})"
    dot_text = drawing(graph, path)
    left = min(DOT_SECONDS, deadline - time.monotonic())
    if left <= 0:
        return None, f"no picture: the page's {PICTURE_SECONDS:.0f} s of layout time are spent ({shlex.join(['refc', 'show', path, '--format', 'svg'])} draws it)"
    try:
        svg = render(dot_text, PictureFormat.SVG, seconds=left).decode("utf-8")
    except UsageError as e:  # dot ran out of time or crashed: the case and its replay command still show
        return None, f"no picture: {e}"
    return svg[svg.index("<svg"):], ""
