"""``refc mutants [--json]``: the mutant catalog (DESIGN §9)."""

from __future__ import annotations

import argparse
import json

from refcompiler.mutants import CATALOG


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mutants", help="list the mutants: deliberately wrong compilers the suite must kill")
    p.add_argument("--json", action="store_true", help="print a JSON list of {name, component, bug_class, description}")
    p.set_defaults(func=run)


def catalog_rows() -> list[dict[str, str]]:
    return [
        {"name": m.name, "component": m.component, "bug_class": m.bug_class, "description": m.description}
        for m in CATALOG.values()
    ]


def run(args: argparse.Namespace) -> int:
    rows = catalog_rows()
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    width = max(len(r["name"]) for r in rows)
    comp = max(len(r["component"]) for r in rows)
    for r in rows:
        print(f"{r['name']:<{width}}  {r['component']:<{comp}}  {r['description']}")
    return 0
