"""``refc replay [PATH...]``: replay corpus cases (DESIGN §10).

Each case must meet its expectation: ``"pass"`` (the oracle chain finds
nothing under the case's schedule, or the standard schedules) or
``{"reject": ID}`` (the verifier rejects it with that id). Paths are case
files or directories of them (default ``corpus/``). Exit 0 when every case
meets its expectation, 1 when one does not, 2 when a file is malformed.
``--mutant NAME`` replays against a deliberately wrong compiler: a case that
kills the mutant then fails (exit 1).
"""

from __future__ import annotations

import argparse

from refcompiler.errors import MalformedInput


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="replay corpus cases; exit 1 if one does not meet its expectation")
    p.add_argument("paths", nargs="*", metavar="PATH", default=["corpus"],
                   help="case files or directories of them (default corpus/)")
    # the oracle installs the mutant around the compiler only, not the reference
    p.add_argument("--mutant", dest="replay_mutant", metavar="NAME", default=None,
                   help="replay against a deliberately wrong compiler (see `refc mutants`)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only cases that fail and the total")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fuzz.corpus import case_files, load_case, replay
    from refcompiler.mutants import get as get_mutant

    if args.replay_mutant is not None:
        get_mutant(args.replay_mutant)
    files = case_files(args.paths)
    if not files:
        raise MalformedInput("no case files (*.json) found", path=", ".join(args.paths))
    failed = malformed = 0
    for path in files:
        try:
            case = load_case(path)
        except MalformedInput as e:
            malformed += 1
            print(f"{e}")
            continue
        finding = replay(case, mutant=args.replay_mutant)
        if finding is None:
            if not args.quiet:
                print(f"{path}: ok ({case.expect})")
        else:
            failed += 1
            print(f"{path}: FAIL (expected {case.expect}): {finding}")
    mutant = f" with mutant {args.replay_mutant}" if args.replay_mutant else ""
    print(f"replayed {len(files)} cases{mutant}: {len(files) - failed - malformed} ok, {failed} failed"
          + (f", {malformed} malformed" if malformed else ""))
    if malformed:
        return 2
    return 1 if failed else 0
