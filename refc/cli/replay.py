"""``refc replay [PATH...]``: replay corpus cases (DESIGN §10).

Paths are case files or directories of them (default ``corpus/``). Each case
gets one line and one verdict (``fuzz.replay``):

- ``ok``: every recorded expectation holds: ``"pass"`` (the oracle chain finds
  nothing under the case's schedule, or the standard schedules), ``{"reject":
  ID}`` (the verifier rejects it with that id, one of G-1, OWN-1..4), and a
  case recorded with ``"mutant": NAME`` still fails with that mutant active;
- ``regressed``: one does not, or the scheduler the case records gives another
  order when asked again for the same graph and seed (exit 1);
- ``malformed``: the case cannot be checked as written: bad JSON or fields, an
  unknown pipeline or mutant, a stored schedule that is not a legal order of
  exactly its nodes (exit 2);
- ``needs plug-in MODULE``: the case names a ``module:attribute`` pipeline,
  scheduler or target. A case file is data: its modules are imported only when
  ``--allow-plugin MODULE`` is given, and then in a child process with stdin
  closed and a time limit, so that a plug-in that exits, forks, reads stdin,
  hangs or raises while the case is checked is reported as that case's error
  (regressed) and the other cases still run. An allowed MODULE that cannot be
  loaded (not found from where replay runs, or raising as it is imported) is
  reported as needed too, with the reason: it is not a regression (exit 2).

The exit code reflects every case: 2 if one is malformed or needs a plug-in,
else 1 if one regressed, else 0. ``--mutant NAME`` asks instead whether each
case kills the mutant: ``kills NAME`` / ``does not kill NAME``; a case
recorded against NAME that no longer kills it is regressed (exit 1).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from refcompiler.errors import LimitExceeded, MalformedInput, RefCompilerError

from refc.cli.common import positive_seconds

_VERDICT_LINE = "refc-replay-verdict "  # how a child reports its one verdict on stdout


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="replay corpus cases; one verdict per case (ok, regressed, malformed, needs plug-in)",
                       description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", metavar="PATH", default=["corpus"],
                   help="case files or directories of them (default corpus/)")
    # the oracle installs the mutant around the compiler only, not the reference
    p.add_argument("--mutant", dest="replay_mutant", metavar="NAME", default=None,
                   help="report whether each case kills this mutant (see `refc mutants`)")
    p.add_argument("--allow-plugin", dest="allow", action="append", default=[], metavar="MODULE",
                   help="let cases import MODULE (a module:attribute pipeline, scheduler or target); repeatable")
    p.add_argument("--plugin-timeout", type=positive_seconds, default=120.0, metavar="S",
                   help="time limit of one plug-in case, in seconds (default 120)")
    p.add_argument("--isolated", action="store_true", help=argparse.SUPPRESS)  # the child of a plug-in case
    p.add_argument("-q", "--quiet", action="store_true", help="print only cases that are not ok, and the total")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fuzz.corpus import case_files, is_campaign_dir, not_a_case_file
    from fuzz.replay import Verdict, exit_code
    from refcompiler.limits import printable
    from refcompiler.mutants import get as get_mutant

    if args.replay_mutant is not None:
        get_mutant(args.replay_mutant)
    allowed = {a.partition(":")[0] for a in args.allow}
    files = case_files(args.paths)
    if not files and not all(is_campaign_dir(Path(p)) for p in args.paths):  # a campaign that found nothing has none
        raise MalformedInput("no case files (*.json) found", path=", ".join(args.paths))
    named = {Path(p) for p in args.paths}
    counts: Counter[Verdict] = Counter()
    for path in files:
        unread = None if path in named else not_a_case_file(path)  # met in a directory: not waited for, nor read for ever
        if unread is not None:
            verdict, detail = Verdict.MALFORMED, unread
        else:
            verdict, detail = _one(path, args, allowed)
        counts[verdict] += 1
        if args.isolated:
            print(_VERDICT_LINE + json.dumps([verdict.value, detail]))
        elif verdict is not Verdict.OK or not args.quiet:
            detail = printable(detail)  # one line: a name a user's pass made may hold a newline
            print(f"{path}: {verdict.value}: {detail}" if verdict is not Verdict.NEEDS_PLUGIN else f"{path}: {detail}")
    mutant = f" against mutant {args.replay_mutant}" if args.replay_mutant else ""
    if not args.isolated:
        print(f"replayed {len(files)} case{'' if len(files) == 1 else 's'}{mutant}: " + ", ".join(f"{counts[v]} {v.value}" for v in Verdict))
    return exit_code(counts)


def _one(path: Path, args: argparse.Namespace, allowed: set[str]) -> tuple["Verdict", str]:
    from fuzz.corpus import load_case
    from fuzz.replay import Verdict, judge, plugin_modules

    try:
        case = load_case(path)
    except (MalformedInput, LimitExceeded) as e:  # malformed, or past a limit: this case only, the others still run
        text = str(e)
        return Verdict.MALFORMED, text[len(f"{path}: "):] if text.startswith(f"{path}: ") else text  # the line names the path
    modules = plugin_modules(case)
    missing = [m for m in modules if m not in allowed]
    if missing:
        flags = " ".join(f"--allow-plugin {m}" for m in missing)
        return Verdict.NEEDS_PLUGIN, f"needs plug-in {', '.join(missing)} (a case file is data; replay with {flags} to run it)"
    if modules and not args.isolated:
        return _in_child(path, args, modules)
    if args.isolated:
        return _contained(case, args.replay_mutant, modules)
    try:
        outcome = judge(case, mutant=args.replay_mutant)
    except RefCompilerError as e:  # e.g. a resource limit: this case only, the others still run
        return (Verdict.MALFORMED if e.exit_code == 2 else Verdict.REGRESSED), str(e)
    return outcome.verdict, outcome.detail


def _contained(case: "Case", mutant: str | None, modules: tuple[str, ...]) -> tuple["Verdict", str]:
    """``judge`` in the child: whatever the plug-in raises, even ``SystemExit``,
    is its error; it may not fork (the parent would get two verdicts)."""
    from fuzz.replay import Verdict, judge

    def no_fork(*_: object) -> int:
        raise PermissionError("a plug-in may not fork during replay")

    os.fork = no_fork  # type: ignore[assignment]  # this process is a throwaway child
    try:
        outcome = judge(case, mutant=mutant)
    except BaseException as e:  # noqa: BLE001 - the plug-in's, by construction of this process
        return Verdict.REGRESSED, f"plug-in {', '.join(modules)}: raised {e!r}"
    return outcome.verdict, outcome.detail


def _in_child(path: Path, args: argparse.Namespace, modules: tuple[str, ...]) -> tuple["Verdict", str]:
    """Replay one plug-in case in a child process (stdin closed, own session,
    ``--plugin-timeout``); a child that ends without a verdict is the plug-in's error."""
    from fuzz.replay import Verdict

    argv = [sys.executable, "-m", "refc", "replay", "--isolated", str(path)]
    argv += [x for m in modules for x in ("--allow-plugin", m)]
    if args.replay_mutant:
        argv += ["--mutant", args.replay_mutant]
    who = f"plug-in {', '.join(modules)}"
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, text=True, errors="replace")
    try:
        out, err = proc.communicate(timeout=args.plugin_timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # the child's own session: it and whatever it started
        proc.communicate()
        return Verdict.REGRESSED, f"{who}: no verdict within {args.plugin_timeout:g} s (--plugin-timeout)"
    verdicts = [line[len(_VERDICT_LINE):] for line in out.splitlines() if line.startswith(_VERDICT_LINE)]
    if len(verdicts) != 1 or proc.returncode not in (0, 1, 2):
        tail = (err.strip().splitlines() or [""])[-1]
        return Verdict.REGRESSED, f"{who}: the process ended without one verdict (exit {proc.returncode}) {tail!r}"
    value, detail = json.loads(verdicts[0])
    return Verdict(value), detail
