"""refc: a reference compiler for tensor graphs with owned variables.

The public names below load on first use (PEP 562), as ``refc``'s do: importing
a light module such as ``refcompiler.errors`` runs this file first, and must not
pay for numpy, networkx and jsonschema, which the graph, its loader, the verifier
and the reference interpreter import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from refcompiler.lazy import exports as _exports, names as _names

if TYPE_CHECKING:
    from refcompiler.errors import (
        ExecutionError,
        InternalError,
        InvariantViolation,
        MalformedInput,
        RefCompilerError,
        UsageError,
    )
    from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind
    from refcompiler.graph_json import graph_from_doc, graph_to_doc, load_graph
    from refcompiler.reference import run_reference
    from refcompiler.verifier import infer_types, verify, violations

__all__ = [
    "ExecutionError", "InternalError", "InvariantViolation", "MalformedInput", "RefCompilerError", "UsageError",
    "Graph", "Init", "Node", "Ref", "Storage", "StorageKind",
    "graph_from_doc", "graph_to_doc", "load_graph",
    "run_reference",
    "infer_types", "verify", "violations",
]

# public name -> (module, attribute)
_LAZY = _names(
    ("refcompiler.errors", ("ExecutionError", "InternalError", "InvariantViolation", "MalformedInput", "RefCompilerError", "UsageError")),
    ("refcompiler.graph", ("Graph", "Init", "Node", "Ref", "Storage", "StorageKind")),
    ("refcompiler.graph_json", ("graph_from_doc", "graph_to_doc", "load_graph")),
    ("refcompiler.reference", ("run_reference",)),
    ("refcompiler.verifier", ("infer_types", "verify", "violations")),
)
__getattr__, __dir__ = _exports(__name__, _LAZY, globals())
