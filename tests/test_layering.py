"""The import contract between the project's packages (docs/design.md, "Layers").

Read from the source with ``ast`` (nothing is imported), so that a violation
fails here even on a code path no other test runs:

- ``specs`` imports nothing of the project;
- ``refcompiler`` never imports ``fuzz`` or ``refc`` (the command line);
- nothing imports ``refc.cli`` but ``refc.cli`` itself and the ``__main__``
  entry points (``python -m refcompiler``, ``python -m refc``,
  ``python -m refc.cli``), which exist only to call ``refc.cli.main``;
- ``z3`` is imported by at most one module per top-level package.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("specs", "refcompiler", "fuzz", "refc")
CLI = "refc.cli"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, module: str, *, is_package: bool = False) -> set[str]:
    """Every module ``source`` (module ``module``) imports; ``from a import b``
    counts as ``a`` and ``a.b``, and relative imports are resolved."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def module_imports(root: Path = ROOT) -> dict[str, set[str]]:
    """Module name -> the modules it imports, for every module of the project's packages."""
    return {
        _module_name(path): imports_of(path.read_text(), _module_name(path), is_package=path.name == "__init__.py")
        for package in PACKAGES
        for path in sorted((root / package).rglob("*.py"))
    }


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def violations(imports: dict[str, set[str]]) -> list[str]:
    """One line per broken rule of the contract (see the module docstring)."""
    out = []
    for module, names in sorted(imports.items()):
        entry_point = module.rpartition(".")[2] == "__main__"
        for name in sorted(names):
            if entry_point and _within(name, CLI):
                continue  # the one exception: ``python -m PACKAGE`` calls ``refc.cli.main``
            if _within(module, "specs") and any(_within(name, p) for p in PACKAGES if p != "specs"):
                out.append(f"{module} imports {name}: specs imports nothing of the project")
            if _within(module, "refcompiler") and (_within(name, "fuzz") or _within(name, "refc")):
                out.append(f"{module} imports {name}: refcompiler never imports fuzz or the command line")
            if _within(name, CLI) and not _within(module, CLI):
                out.append(f"{module} imports {name}: nothing imports the command line")
    for package in PACKAGES:
        users = sorted(m for m, names in imports.items() if _within(m, package) and any(_within(n, "z3") for n in names))
        if len(users) > 1:
            out.append(f"z3 is imported by {len(users)} modules of {package} ({', '.join(users)}); at most one")
    return out


def test_the_project_keeps_its_import_contract():
    found = violations(module_imports())
    assert not found, "\n".join(found)


def test_the_contract_catches_each_kind_of_violation():
    planted = {
        "specs.ops": {"refcompiler.graph"},
        "refcompiler.driver": {"fuzz.oracle", "refc.cli.common"},
        "fuzz.campaign": {"refc.cli"},
        "refc.__main__": {"refc.cli"},  # an entry point: allowed
        "refcompiler.__main__": {"refc.cli", "fuzz.oracle"},  # ... but only the CLI
        "refc.cli.run": {"refc.cli.common"},  # inside the CLI: allowed
        "fuzz.a": {"z3"},
        "fuzz.b": {"z3"},
    }
    found = violations(planted)
    assert found == [
        "fuzz.campaign imports refc.cli: nothing imports the command line",
        "refcompiler.__main__ imports fuzz.oracle: refcompiler never imports fuzz or the command line",
        "refcompiler.driver imports fuzz.oracle: refcompiler never imports fuzz or the command line",
        "refcompiler.driver imports refc.cli.common: refcompiler never imports fuzz or the command line",
        "refcompiler.driver imports refc.cli.common: nothing imports the command line",
        "specs.ops imports refcompiler.graph: specs imports nothing of the project",
        "z3 is imported by 2 modules of fuzz (fuzz.a, fuzz.b); at most one",
    ]


def test_relative_imports_are_resolved():
    source = "from ..refcompiler import graph\nfrom . import shapes\nimport z3\n"
    assert imports_of(source, "specs.ops") == {"refcompiler", "refcompiler.graph", "specs", "specs.shapes", "z3"}
