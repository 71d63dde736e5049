"""refc: a reference compiler for tensor graphs with owned variables, and the
suite that proves such a compiler right. This is the public Python API.

The top layer over the reference compiler (``refcompiler``), the verification
suite (``fuzz``) and the op table (``specs``). ``refc.cli`` is the ``refc``
command; nothing here imports it. Names load on first use, so the command
line does not pay for Hypothesis or Z3 it does not need.

- graphs: ``Graph``, ``OpKind``, ``load_graph``, ``dump_graph``, ``graph_from_doc``,
  ``graph_to_doc``; ``validate(graph)`` lists the violations (G-1, OWN-1..4);
- ``compile_graph(graph, scheduler=..., pipeline=...)`` and ``run_compiled``;
- ``prove(graph, engine=...)``: SCH-2, a proof or a counterexample schedule pair;
- ``check(graph, schedule=None, pipeline="O2")``: the whole oracle chain, the
  first ``Finding`` or ``None``;
- ``refc.strategies``: Hypothesis strategies of valid graphs, graphs that
  break one invariant, and schedules; ``refc.profiles``: Hypothesis profiles;
- ``refc.pytest_plugin``: ``pytest --refc-corpus DIR`` (installed as a pytest
  plugin with the package).
"""

from __future__ import annotations

from refcompiler.lazy import exports as _exports

__all__ = [
    "Graph",
    "OpKind",
    "load_graph",
    "dump_graph",
    "graph_from_doc",
    "graph_to_doc",
    "validate",
    "compile_graph",
    "run_compiled",
    "prove",
    "check",
    "Finding",
    "strategies",
    "profiles",
]

# public name -> (module, attribute); attribute None: the module itself
_LAZY: dict[str, tuple[str, str | None]] = {
    "Graph": ("refcompiler.graph", "Graph"),
    "OpKind": ("specs", "OpKind"),
    "load_graph": ("refcompiler.graph_json", "load_graph"),
    "dump_graph": ("refcompiler.graph_json", "dump_graph"),
    "graph_from_doc": ("refcompiler.graph_json", "graph_from_doc"),
    "graph_to_doc": ("refcompiler.graph_json", "graph_to_doc"),
    "validate": ("refcompiler.verifier", "violations"),
    "compile_graph": ("refcompiler.driver", "compile_graph"),
    "run_compiled": ("refcompiler.driver", "run_compiled"),
    "prove": ("refcompiler.proofs", "prove"),
    "check": ("fuzz.oracle", "check"),
    "Finding": ("fuzz.oracle", "Finding"),
    "strategies": ("refc.strategies", None),
    "profiles": ("refc.profiles", None),
}


__getattr__, __dir__ = _exports(__name__, _LAZY, globals())
