"""A stored case of a user's plug-in replayed in a fresh process, as ``refc
replay`` replays it: a campaign's own replay (``failure.finish``) runs in the
process that called the plug-in for every earlier case, so a scheduler or
pass that keeps state between calls (orders memoised by the graph's name)
reproduces there from what earlier graphs left, and a case that ``refc
replay`` finds passing was reported as reproducing, shrunk to a graph of no
nodes. ``python -m fuzz.campaign.fresh`` reads ``{"case": DOC, "mutant":
NAME}`` on stdin and prints, on a line of its own after ``ANSWER``, the
signature (``Signature.to_doc``) of what replaying the case finds, or null.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

__all__ = ["ANSWER", "fresh_signature", "main"]

ANSWER = "refc-fresh-replay "  # the line the child answers on (a plug-in's own prints go to stderr)


class NoAnswer(Exception):
    """The child ended without an answer (its plug-in ended the process); the message says how."""


def fresh_signature(doc: dict[str, object], mutant: str | None, seconds: float | None) -> dict[str, object] | None | str:
    """What replaying the case ``doc`` (with ``mutant``) finds in a fresh
    Python process: the signature document, or ``None`` for nothing; the
    string ``"timeout"`` when no answer came within ``seconds`` (``None``:
    no limit). ``NoAnswer`` when the child ended without one."""
    request = json.dumps({"case": doc, "mutant": mutant})
    # the campaign's module path (a plug-in's folder may be on it by other means than PYTHONPATH)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.Popen([sys.executable, "-m", "fuzz.campaign.fresh"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, text=True, errors="replace", env=env)
    try:
        out, err = proc.communicate(request, timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # its own session: it and whatever its plug-in started
        proc.communicate()
        return "timeout"
    answers = [line[len(ANSWER):] for line in out.splitlines() if line.startswith(ANSWER)]
    if len(answers) != 1:
        tail = (err.strip().splitlines() or [""])[-1]
        raise NoAnswer(f"the process ended without an answer (exit {proc.returncode}) {tail[-200:]!r}")
    return json.loads(answers[0])


def main() -> None:
    from fuzz.case import case_from_doc
    from fuzz.corpus import replay

    request = json.loads(sys.stdin.read())
    finding = replay(case_from_doc(request["case"]), mutant=request["mutant"])
    answer = None if finding is None else finding.signature.to_doc()
    print(ANSWER + json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
