"""``refc export``: a refc graph as an ONNX model.

- a constant becomes an initializer;
- a placeholder becomes a graph input; when a ``save`` writes it, also a graph
  output (``exit_names``) carrying its value at function exit; every read sees
  the input, i.e. the value at entry, as DESIGN §2 says;
- an owned variable becomes a state input and a state output (its new value),
  so that running the model twice, feeding each state output back, is two runs;
- every node goes through ``lowerings.LOWERINGS``, in a topological order of
  the data edges (ONNX's nodes are listed in one).

The model declares opset ``EXPORT_OPSET`` (ScatterND's ``reduction`` needs 16)
and records which output holds which storage in its metadata (``refc.exits``).
It passes ``onnx.checker`` and ``onnx.shape_inference`` in strict mode.
"""

from __future__ import annotations

import json

import onnx
from onnx import ModelProto, helper, numpy_helper

from specs import OpKind, TensorType

from refcompiler.graph import Graph, Node, Ref, StorageKind, initial_value
from refcompiler.onnx_io.lowerings import LOWERINGS, Emitter, Site
from refcompiler.onnx_io.types import ONNX_DTYPE, Namer
from refcompiler.verifier import evaluation_order, verify

__all__ = ["EXPORT_OPSET", "IR_VERSION", "exit_names", "export_graph", "write_model"]

EXPORT_OPSET = 17
IR_VERSION = 8  # what opset 17 came with; onnxruntime reads it


def exit_names(graph: Graph) -> dict[str, str]:
    """ONNX output name -> the storage it holds at exit: saved placeholders, then
    owned variables, in storage order. Deterministic, so tests can name outputs."""
    namer = _namer(graph)
    saved = {n.target for n in graph.saves()}
    out = {}
    for s in graph.storage:
        if s.kind is StorageKind.OWNED or (s.kind is StorageKind.PLACEHOLDER and s.name in saved):
            out[namer.fresh(f"{s.name}.exit")] = s.name
    return out


def _namer(graph: Graph) -> Namer:
    namer = Namer(clean=False)
    namer.used |= {s.name for s in graph.storage} | {n.name for n in graph.nodes}
    return namer


def export_graph(graph: Graph) -> ModelProto:
    """The ONNX model of a valid graph (``InvariantViolation`` if it is not)."""
    types = verify(graph)
    exits = exit_names(graph)
    exit_of = {storage: name for name, storage in exits.items()}
    namer = _namer(graph)
    namer.used |= set(exits)
    e = Emitter(namer)
    result_names = {
        (n.name, k): n.name if len(n.spec.results) == 1 else namer.fresh(f"{n.name}.{k}") for n in graph.nodes for k in range(len(n.spec.results))
    }
    for s in graph.storage_of_kind(StorageKind.CONSTANT):
        e.initializers.append(numpy_helper.from_array(initial_value(s), s.name))
    for name in evaluation_order(graph):
        node = graph.node_by_name[name]
        LOWERINGS[node.op](e, _site(graph, node, types, result_names, exit_of))
    inputs = [_info(s.name, TensorType(s.shape, s.dtype)) for s in graph.storage if s.kind is not StorageKind.CONSTANT]
    outputs = [_info(name, _storage_type(graph, storage)) for name, storage in exits.items()]
    g = helper.make_graph(e.nodes, graph.name, inputs, outputs, initializer=e.initializers)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", EXPORT_OPSET)], producer_name="refc")
    model.ir_version = IR_VERSION
    helper.set_model_props(model, {"refc.exits": json.dumps(exits)})
    return model


def _site(graph: Graph, node: Node, types: dict, result_names: dict, exit_of: dict[str, str]) -> Site:
    def name_of(ref: Ref) -> str:
        return ref.name if graph.is_storage(ref) else result_names[(ref.name, ref.result)]

    def type_of(ref: Ref) -> TensorType:
        return _storage_type(graph, ref.name) if graph.is_storage(ref) else types[(ref.name, ref.result)]

    results = [result_names[(node.name, k)] for k in range(len(node.spec.results))]
    if node.op is OpKind.SAVE:
        results = [exit_of[node.target]]
    return Site(
        node=node,
        ins=[name_of(r) for r in node.inputs],
        in_types=[type_of(r) for r in node.inputs],
        state=list(node.state),
        state_types=[_storage_type(graph, s) for s in node.state],
        results=results,
        state_out=[exit_of[s] for s in node.state],
    )


def _storage_type(graph: Graph, name: str) -> TensorType:
    s = graph.storage_by_name[name]
    return TensorType(s.shape, s.dtype)


def _info(name: str, t: TensorType) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, ONNX_DTYPE[t.dtype], list(t.shape))


def write_model(model: ModelProto, path: str) -> None:
    """Write ``model`` through a temporary file and a rename."""
    from refcompiler.graph_json import write_atomic

    data = model.SerializeToString()
    write_atomic(path, lambda f: f.write(data))
