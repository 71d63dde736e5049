"""refc: a reference compiler for tensor graphs with owned variables."""

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
