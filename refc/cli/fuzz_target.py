"""``refc fuzz --target``: the target's side of a campaign. Before it, the target
is resolved here (exit 2 naming the pip command when its package is missing);
after it, each distinct finding's shrunk case becomes a bug folder
``OUT/bugs/<signature slug>/`` (``refcompiler.targets.bugs``) that runs without refc."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

__all__ = ["check_target", "write_bugs", "summary_lines"]


def check_target(spec: str | None) -> None:
    if spec is not None:
        from refcompiler.targets import resolve_target

        resolve_target(spec)


def write_bugs(doc: dict[str, Any], out: Path, spec: str | None) -> list[Path]:
    """One bug folder per signature of the summary ``doc`` whose case still fails."""
    if spec is None:
        return []
    from fuzz.case import ExpectKind, case_inputs
    from fuzz.corpus import load_case
    from fuzz.time_limit import CaseTimeout, time_limit
    from refcompiler.errors import ExecutionError
    from refcompiler.targets import resolve_target
    from refcompiler.targets.bugs import write_bug_folder
    from refcompiler.targets.isolate import LOCATE_TRIES, target_timeout

    # the target runs on the graph again in its child (a crash is run again per
    # configuration), then makes its files there: each under the target's own time limit
    limit = BUG_FOLDER_SECONDS + (LOCATE_TRIES + 2) * target_timeout(resolve_target(spec))
    written = []
    for entry in doc["signatures"]:
        case = load_case(out / entry["case"])
        if case.expect.kind is not ExpectKind.PASS:
            continue
        folder = out / "bugs" / Path(entry["case"]).stem
        try:
            with time_limit(limit):  # no signal stops this process now: a target's code that hangs in it (versions()) must not
                if write_bug_folder(folder, spec, case.graph, case_inputs(case)) is not None:
                    written.append(folder)
        except ExecutionError as e:  # the target's own code failed writing it: the other folders still come
            print(f"refc fuzz: no bug folder for {entry['case']}: {e}", file=sys.stderr)
        except CaseTimeout as e:
            print(f"refc fuzz: no bug folder for {entry['case']}: still writing it{e.place} after {limit:g} s", file=sys.stderr)
    return written


# seconds a bug folder may take besides the target's own time limits (its child's)
BUG_FOLDER_SECONDS = 120.0


def summary_lines(doc: dict[str, Any]) -> list[str]:
    """The target's figures of a campaign summary, for the printed summary."""
    t = doc.get("target")
    if t is None:
        return []
    lines = [
        f"  target {t['name']}: {t['configurations']} configurations; {t['graphs']} graphs ({t['graphs_per_second']}/s), "
        f"{t['refused']} refused, {t['graphs'] - t['refused']} compiled ({t['compiled_graphs_per_second']}/s)"
    ]
    lines += [f"    refused {n}x: {reason}" for reason, n in t["refusal_reasons"]]
    return lines
