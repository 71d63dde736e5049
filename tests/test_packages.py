"""The packages that re-export names load them on first use (PEP 562): each
public name resolves, ``__all__`` is the table of lazy names, and importing the
package alone loads none of the modules behind them."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAZY = ("refc", "refcompiler", "refcompiler.pictures", "refcompiler.symbolic", "fuzz")
HEAVY = ("numpy", "networkx", "z3", "rich", "hypothesis", "jsonschema")


@pytest.mark.parametrize("name", LAZY)
def test_every_public_name_resolves(name):
    package = importlib.import_module(name)
    assert sorted(package._LAZY) == sorted(package.__all__)
    for public in package.__all__:
        assert getattr(package, public) is not None
        assert public in dir(package)
    with pytest.raises(AttributeError):
        getattr(package, "no_such_name")


@pytest.mark.parametrize("name", LAZY)
def test_importing_the_package_loads_nothing_heavy(name):
    probe = f"import sys, {name}\nprint(sorted(h for h in {HEAVY!r} if h in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_from_import_gives_the_names_and_the_submodules():
    from refcompiler import Graph, limits, violations

    from refcompiler.graph import Graph as defined
    from refcompiler.verifier import violations as checker

    assert Graph is defined and violations is checker and limits.__name__ == "refcompiler.limits"
