"""A campaign's outputs: the summary document, JUnit XML and one shrunk
corpus case per distinct failure signature."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from refcompiler.graph_json import write_json_atomic

from fuzz.campaign.summary import Summary, replay_command
from fuzz.corpus import format_case_doc, write_text_atomic

__all__ = ["UNSETTLED_DIR", "write_outputs", "junit_xml", "markdown_summary", "github_annotations", "inconclusive_text", "unsettled_text", "unsettled_lines"]


UNSETTLED_DIR = "inconclusive"  # the cases whose programs the symbolic stage left unsettled (``Summary.unsettled_kept``)


def write_outputs(summary: Summary, out: Path) -> None:
    """``out/summary.json``, ``out/junit.xml``, ``out/cases/<signature>.json``
    (one shrunk case per distinct signature) and ``out/inconclusive/<k>.json``
    (the first cases the symbolic stage left unsettled: not findings), each
    written atomically, never through a link planted inside ``out``."""
    cases_dir = out / "cases"
    for sig, failure in sorted(summary.found.items()):
        path = cases_dir / f"{sig.slug}.json"
        write_text_atomic(path, format_case_doc(failure.case_doc), root=out)
        summary.case_files[sig] = str(path.relative_to(out))
    files = []
    for k, (_, unsettled) in enumerate(summary.unsettled_kept, 1):  # apart from cases/: not findings, not replayed with them
        path = out / UNSETTLED_DIR / f"{k}.json"
        write_text_atomic(path, format_case_doc(unsettled.case_doc), root=out)
        files.append(str(path.relative_to(out)))
    summary.unsettled_files = files
    write_json_atomic(out / "summary.json", summary.to_doc(), root=out)
    write_text_atomic(out / "junit.xml", junit_xml(summary), root=out)


def junit_xml(summary: Summary) -> str:
    """A JUnit report: one test case per distinct failure signature, or one
    passing test case when nothing failed (in error when the campaign is
    inconclusive: ``Summary.inconclusive``, its lost chunks as the message).
    What the symbolic stage left unsettled is no failure: a property counts it,
    and the suite's ``system-out`` lists the cases kept."""
    doc = summary.to_doc()
    suite = ET.Element(
        "testsuite",
        name="refc fuzz",
        tests=str(max(1, len(summary.found))),
        failures=str(len(summary.found)),
        errors="1" if summary.inconclusive else "0",
        skipped="0",
        time=f"{summary.seconds:.3f}",
    )
    props = ET.SubElement(suite, "properties")
    for key in ("seed", "workers", "mutant", "pipeline", "cases", "schedules", "failures", "cases_per_second", "schedules_per_second", "stopped_by"):
        if doc[key] is not None:  # an unset option is left out, never "None"
            ET.SubElement(props, "property", name=key, value=str(doc[key]))
    unsettled = doc["symbolic_inconclusive"]
    ET.SubElement(props, "property", name="symbolic_inconclusive", value=str(unsettled["programs"]))
    if not summary.found:
        # a stable name (CI tracks a test by name across runs): the counts are properties
        tc = ET.SubElement(suite, "testcase", classname="refc.fuzz", name="no failure", time=f"{summary.seconds:.3f}")
        if summary.inconclusive:
            error = ET.SubElement(tc, "error", message=f"inconclusive: {inconclusive_text(summary)}"[:500], type="inconclusive")
            error.text = "\n".join(f"lost chunk {lost['chunk']}: {lost['reason']}" for lost in summary.lost_chunks)
    for entry in doc["signatures"]:
        tc = ET.SubElement(suite, "testcase", classname="refc.fuzz", name=entry["text"], time=f"{entry['seconds_to_find']:.3f}")
        failure = ET.SubElement(tc, "failure", message=entry["explanation"][:500], type=entry["signature"]["invariant"])
        case = entry["case"] if summary.config.out is None else summary.config.out / entry["case"]  # as the replay command names it
        failure.text = (
            f"{entry['explanation']}\nshrunk case: {case} ({entry['nodes']} node{'' if entry['nodes'] == 1 else 's'})\n"
            f"replay: {entry['replay']}"
        )
    if unsettled["programs"]:
        ET.SubElement(suite, "system-out").text = "\n".join(unsettled_lines(doc, summary.config.out)) + "\n"
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def markdown_summary(summary: Summary, out: Path) -> str:
    """A Markdown report for ``$GITHUB_STEP_SUMMARY``: totals, then one row per
    distinct failure with its case and replay command."""
    doc = summary.to_doc()
    verdict = "found failures" if summary.found else f"inconclusive: {inconclusive_text(summary)}" if summary.inconclusive else "no failure"
    if summary.interrupted:
        verdict += f" (interrupted by {summary.interrupted})"
    lines = [
        f"### refc fuzz: {verdict}",
        "",
        f"seed {doc['seed']}, {doc['cases']} cases, {doc['schedules']} schedules in {doc['seconds']:.1f} s; "
        f"{doc['failures']} failing, {doc['distinct_failures']} distinct",
        "",
    ]
    if doc["signatures"]:
        lines += ["| failure | nodes | replay |", "| --- | --- | --- |"]
        for entry in doc["signatures"]:
            command = replay_command(summary.config, str(out / entry["case"]))
            lines.append(f"| {_cell(entry['text'])}: {_cell(entry['explanation'][:200])} | {entry['nodes']} | `{command}` |")
    unsettled = doc["symbolic_inconclusive"]
    if unsettled["programs"]:
        lines += [*([""] if lines[-1] else []), f"{unsettled_text(doc)}:", "", "| pipeline, schedule | why | look at it |", "| --- | --- | --- |"]
        for entry in unsettled["kept"]:
            look = f"`{entry['validate']}`" if entry["validate"] else "-"
            lines.append(f"| {_cell(entry['pipeline'])}, {_cell(entry['schedule'] or 'no schedule')} | {_cell(entry['reason'][:200])} | {look} |")
    return "\n".join(lines) + "\n"


def inconclusive_text(summary: Summary) -> str:
    """Why ``summary`` (``Summary.inconclusive``) cannot say its cases pass, for a person."""
    why = "no valid case was checked" if summary.cases == summary.invalid_cases else "a worker died"
    return f"nothing found, but {why} ({len(summary.lost_chunks)} lost chunk{'' if len(summary.lost_chunks) == 1 else 's'})"


def unsettled_text(doc: dict) -> str:
    """What a summary document's ``symbolic_inconclusive`` counts, for a person (its ``programs`` not 0)."""
    unsettled = doc["symbolic_inconclusive"]
    programs, cases = unsettled["programs"], unsettled["cases"]
    return (f"inconclusive, not a finding: symbolic validation neither proved nor refuted {programs} program{'' if programs == 1 else 's'} "
            f"of {cases} case{'' if cases == 1 else 's'} (Z3 unknown or out of time, or a difference the concrete run does not confirm)")


def unsettled_lines(doc: dict, out: Path | None = None) -> list[str]:
    """``unsettled_text`` and two lines per case kept: its pipeline, schedule and
    reason; its file (in ``out``) and the ``refc validate`` command that looks at it again."""
    unsettled = doc["symbolic_inconclusive"]
    lines = [unsettled_text(doc) + (f"; {len(unsettled['kept'])} kept to look at:" if unsettled["kept"] else "")]
    for entry in unsettled["kept"]:
        at = f" (first at {entry['difference']})" if entry["difference"] else ""
        lines.append(f"  pipeline {entry['pipeline']}, {entry['schedule'] or 'no schedule'}: {entry['reason']}{at}")
        if entry["case"] is not None:
            case = entry["case"] if out is None else out / entry["case"]
            lines.append(f"    case {case} ({entry['nodes']} node{'' if entry['nodes'] == 1 else 's'}); validate: {entry['validate']}")
    return lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def github_annotations(summary: Summary, out: Path) -> list[str]:
    """One ``::error`` workflow command per distinct failure (GitHub Actions)."""
    lines = []
    for entry in summary.to_doc()["signatures"]:
        path = out / entry["case"]
        message = f"{entry['explanation'][:300]} -- replay: {replay_command(summary.config, str(path))}"
        lines.append(f"::error file={_escape(str(path), True)},title={_escape(entry['text'], True)}::{_escape(message, False)}")
    return lines


def _escape(text: str, prop: bool) -> str:
    """GitHub's workflow-command escaping (``%``, CR, LF; and ``:`` ``,`` in properties)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text
