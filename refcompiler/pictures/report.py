"""The campaign report: one self-contained HTML page (``refc report``).

Everything is inline (CSS, SVG pictures, the cases' JSON), so the page opens
from a file with no network. It shows the summary, the throughput chart,
each distinct finding with its explanation, picture, case and a one-line
replay command, and what the symbolic stage left inconclusive. The page
builder takes already-read data (``FindingView``, ``UnsettledView``);
reading a campaign's output directory is the command's job.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Sequence

from refcompiler.pictures.charts import throughput_svg

__all__ = ["FindingView", "UnsettledView", "campaign_html", "SUMMARY_FIELDS"]

# Summary fields shown in the table, in this order, with their headings.
SUMMARY_FIELDS = (
    ("mutant", "mutant"),
    ("seed", "seed"),
    ("workers", "workers"),
    ("budget", "time budget (s)"),
    ("max_cases", "case budget"),
    ("pipeline", "pipeline under test"),
    ("schedulers", "schedulers"),
    ("cases", "cases"),
    ("invalid_cases", "of which invalid graphs"),
    ("schedules", "schedules"),
    ("failures", "failing cases"),
    ("distinct_failures", "distinct failures"),
    ("seconds", "seconds"),
    ("cases_per_second", "cases per second"),
    ("schedules_per_second", "schedules per second"),
    ("stopped_by", "stopped by"),
)

# A target campaign's (``--target``; its summary's ``target`` object) fields, shown in
# place of those of refc's own compiler (its pipeline, schedulers and schedules).
TARGET_FIELDS = (
    ("name", "target"),
    ("configurations", "target configurations"),
    ("refused", "graphs the target refused"),
    ("graphs_per_second", "graphs per second"),
    ("compiled_graphs_per_second", "compiled graphs per second"),
)
_COMPILER_ONLY = ("pipeline", "schedulers", "schedules", "schedules_per_second")

_CSS = """
body { font-family: Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1200px; color: #212121; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #bdbdbd; margin-top: 2em; }
table.summary td, table.summary th { text-align: left; padding: 2px 12px 2px 0; }
.verdict { font-size: 1.2em; padding: .5em 1em; border-radius: 4px; display: inline-block; }
.verdict.found { background: #ffcdd2; color: #b71c1c; } .verdict.clean { background: #c8e6c9; color: #1b5e20; }
section.finding { border: 1px solid #e0e0e0; border-radius: 6px; padding: 0 1em 1em; margin: 1em 0; }
.picture { overflow-x: auto; max-width: 100%; } .picture svg { max-width: 100%; height: auto; }
code.replay { display: block; background: #263238; color: #eceff1; padding: .6em; border-radius: 4px; white-space: pre-wrap; }
pre { background: #f5f5f5; padding: .6em; overflow-x: auto; } .note { color: #757575; }
"""


@dataclass(frozen=True)
class FindingView:
    """One distinct finding as the page shows it. ``picture``: inline SVG
    markup, or ``None`` with ``picture_note`` saying why there is none."""

    title: str
    explanation: str
    facts: tuple[tuple[str, str], ...]
    replay: str
    case_text: str
    picture: str | None
    picture_note: str = ""


@dataclass(frozen=True)
class UnsettledView:
    """What the symbolic stage neither proved nor refuted (not findings): how
    many programs, in how many cases, and per case kept (where: pipeline and
    schedule; why; its case file; the ``refc validate`` command)."""

    programs: int
    cases: int | None
    kept: tuple[tuple[str, str, str, str], ...]


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _shown(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _summary_table(summary: dict[str, Any]) -> str:
    target = summary.get("target")
    fields = SUMMARY_FIELDS
    if isinstance(target, dict):  # an external compiler was fuzzed: refc's pipeline and schedules say nothing
        fields = tuple(f for f in SUMMARY_FIELDS if f[0] not in _COMPILER_ONLY)
    rows = [(head, summary.get(key)) for key, head in fields if key in summary]
    if isinstance(target, dict):
        rows[1:1] = [(head, target.get(key)) for key, head in TARGET_FIELDS if key in target]  # after the mutant: what was fuzzed
    cells = "".join(f"<tr><th>{_e(head)}</th><td>{_e(_shown(value))}</td></tr>" for head, value in rows)
    return '<table class="summary">' + cells + "</table>"


def _finding(k: int, f: FindingView) -> str:
    facts = "".join(f"<li>{_e(name)}: {_e(value)}</li>" for name, value in f.facts)
    picture = f'<div class="picture">{f.picture}</div>' if f.picture is not None else f'<p class="note">{_e(f.picture_note)}</p>'
    return (
        f'<section class="finding" id="finding-{k}">'
        f"<h3>{k}. {_e(f.title)}</h3>"
        f'<p class="explanation">{_e(f.explanation)}</p>'
        f"<ul>{facts}</ul>"
        f"<p>Replay it:</p><code class=\"replay\">{_e(f.replay)}</code>"
        f"{picture}"
        f"<details><summary>the case (JSON)</summary><pre>{_e(f.case_text)}</pre></details>"
        "</section>"
    )


def _unsettled(u: UnsettledView) -> str:
    cases = "" if u.cases is None else f" of {u.cases} case{'' if u.cases == 1 else 's'}"
    head = (f'<p id="inconclusive-count">symbolic validation neither proved nor refuted {u.programs} program{"" if u.programs == 1 else "s"}{_e(cases)} '
            "(Z3 unknown or out of time, or a difference that the concrete run does not confirm): not findings, worth a look</p>")
    items = "".join(
        f'<li><p>{_e(where)}: {_e(why)}</p><p>case {_e(case)}; look at it:</p><code class="replay">{_e(command)}</code></li>'
        for where, why, case, command in u.kept
    )
    return head + (f"<ol>{items}</ol>" if items else "")


def campaign_html(title: str, summary: dict[str, Any], findings: Sequence[FindingView], found_at: Sequence[float], notes: Sequence[str] = (),
                  unsettled: UnsettledView | None = None) -> str:
    """The whole page. ``found_at``: seconds to find each finding (the chart's ticks);
    ``notes``: anything the reader should know about what could not be read;
    ``unsettled``: what the symbolic stage left inconclusive, if anything."""
    count = len(findings)
    verdict = (
        f'<p class="verdict found" id="finding-count">{count} distinct finding{"" if count == 1 else "s"}</p>'
        if count
        else '<p class="verdict clean" id="finding-count">0 distinct findings: nothing failed</p>'
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        verdict,
        *(f'<p class="note">{_e(n)}</p>' for n in notes),
        "<h2>Summary</h2>",
        _summary_table(summary),
        "<h2>Throughput over time</h2>",
        f'<div class="picture">{throughput_svg(summary, found_at)}</div>',
        "<h2>Findings</h2>",
        *(_finding(k, f) for k, f in enumerate(findings, 1)),
        "" if findings else '<p class="note">no failure was found</p>',
        *(["<h2>Inconclusive (not findings)</h2>", _unsettled(unsettled)] if unsettled is not None else []),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
