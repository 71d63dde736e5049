"""A campaign's outputs: the summary document, JUnit XML and one shrunk
corpus case per distinct failure signature."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from refcompiler.graph_json import write_json_atomic

from fuzz.campaign.summary import Summary
from fuzz.corpus import format_case_doc, write_text_atomic

__all__ = ["write_outputs", "junit_xml"]


def write_outputs(summary: Summary, out: Path) -> None:
    """``out/summary.json``, ``out/junit.xml`` and ``out/cases/<signature>.json``
    (one shrunk case per distinct signature), each written atomically, never
    through a link planted inside ``out``."""
    cases_dir = out / "cases"
    for sig, failure in sorted(summary.found.items()):
        path = cases_dir / f"{sig.slug}.json"
        write_text_atomic(path, format_case_doc(failure.case_doc), root=out)
        summary.case_files[sig] = str(path.relative_to(out))
    write_json_atomic(out / "summary.json", summary.to_doc(), root=out)
    write_text_atomic(out / "junit.xml", junit_xml(summary), root=out)


def junit_xml(summary: Summary) -> str:
    """A JUnit report: one test case per distinct failure signature, or one
    passing test case when nothing failed."""
    doc = summary.to_doc()
    suite = ET.Element(
        "testsuite",
        name="refc fuzz",
        tests=str(max(1, len(summary.found))),
        failures=str(len(summary.found)),
        errors="0",
        skipped="0",
        time=f"{summary.seconds:.3f}",
    )
    props = ET.SubElement(suite, "properties")
    for key in ("seed", "workers", "mutant", "cases", "schedules", "failures", "cases_per_second", "schedules_per_second"):
        ET.SubElement(props, "property", name=key, value=str(doc[key]))
    if not summary.found:
        ET.SubElement(suite, "testcase", classname="refc.fuzz", name=f"{summary.cases} cases, no failure", time=f"{summary.seconds:.3f}")
    for entry in doc["signatures"]:
        tc = ET.SubElement(suite, "testcase", classname="refc.fuzz", name=entry["text"], time="0")
        failure = ET.SubElement(tc, "failure", message=entry["explanation"][:500], type=entry["signature"]["invariant"])
        failure.text = (
            f"{entry['explanation']}\nshrunk case: {entry['case']} ({entry['nodes']} nodes)\n"
            f"replay: refc replay {entry['case']}" + (f" --mutant {summary.config.mutant}" if summary.config.mutant else "")
        )
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
