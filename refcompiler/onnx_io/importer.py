"""``refc import``: an ONNX model file as a refc graph.

Initializers and ``Constant`` nodes become constants (stored only when a data
operand reads them); graph inputs become placeholders (their values given, or
drawn from a seed); each graph output becomes a placeholder written by a
``save``. Nodes go through ``converters.CONVERTERS``. Opsets 7 to what the
installed ``onnx`` knows are accepted. Anything else is refused with one line
naming the file, the node (or input) and why: a ``MalformedInput``, exit 2.
A model file is data: nothing in it is executed, external data files it names
are never opened, and its size is bounded (``MAX_FILE_BYTES``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import ModelProto, TensorProto

from specs import TensorType

from refcompiler.errors import LimitExceeded, MalformedInput
from refcompiler.files import read_bounded
from refcompiler.graph import Graph, Init, StorageKind
from refcompiler.graph_json import MAX_NAME, default_name, graph_from_doc, graph_to_doc
from refcompiler.limits import clipped, printable, shown
from refcompiler.onnx_io.builder import Builder, Value
from refcompiler.onnx_io.converters import CONVERTERS, OnnxNode
from refcompiler.onnx_io.errors import Refused, node_where, refused
from refcompiler.onnx_io.types import refc_dtype, static_shape, tensor_array

__all__ = ["Imported", "MIN_OPSET", "MAX_FILE_BYTES", "load_model", "import_model", "import_file"]

MIN_OPSET = 7
# A reference compiler runs small graphs; a larger file is a mistake, not a workload.
MAX_FILE_BYTES = 64 << 20


@dataclass(frozen=True)
class Imported:
    """``graph``, and which placeholder holds each ONNX graph input and output."""

    graph: Graph
    inputs: dict[str, str]
    outputs: dict[str, str]


def load_model(path: str | os.PathLike[str]) -> ModelProto:
    """Read and check a model file; any failure is a one-line ``MalformedInput``."""
    p = str(path)
    # bounded while reading, not by ``stat``: ``/dev/zero`` or a pipe has no size
    data = read_bounded(p)
    if len(data) > MAX_FILE_BYTES:
        raise MalformedInput(f"{len(data)} bytes is more than refc reads ({MAX_FILE_BYTES})", path=p)
    if not data:
        raise MalformedInput("the file is empty", path=p)
    model = ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise MalformedInput(f"not an ONNX model (the protobuf does not decode: {_line(e)})", path=p) from None
    if not model.HasField("graph"):
        raise MalformedInput("not an ONNX model (it has no graph)", path=p)
    external = _external_tensor(model)
    if external is not None:
        raise MalformedInput(f"{external} keeps its data in another file; refc reads only the model file", path=p)
    try:
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, ValueError) as e:
        raise MalformedInput(f"not a valid ONNX model: {_line(e)}", path=p) from None
    return model


def _external_tensor(model: ModelProto) -> str | None:
    """The first tensor of ``model`` whose data is in another file (an
    initializer, a ``Constant``'s value or any node attribute, in the graph, its
    subgraphs and the model's functions), as a message names it; ``None`` when
    there is none. ``numpy_helper.to_array`` would read such a file, relative to
    the current directory."""
    graphs, nodes = [model.graph], [n for f in model.functions for n in f.node]
    while graphs or nodes:
        if graphs:
            g = graphs.pop()
            for t in [*g.initializer, *(x for s in g.sparse_initializer for x in (s.values, s.indices))]:
                if _is_external(t):
                    return f"initializer {shown(t.name)}"
            nodes.extend(g.node)
            continue
        node = nodes.pop()
        for a in node.attribute:
            sparse = [*a.sparse_tensors, *([a.sparse_tensor] if a.HasField("sparse_tensor") else [])]
            tensors = [*([a.t] if a.HasField("t") else []), *a.tensors, *(x for s in sparse for x in (s.values, s.indices))]
            if any(_is_external(t) for t in tensors):
                owner = f"node {shown(node.name)}" if node.name else "an unnamed node"
                return f"attribute {shown(a.name)} of {owner} ({shown(node.op_type)})"
            graphs.extend([*([a.g] if a.HasField("g") else []), *a.graphs])
    return None


def _is_external(t: TensorProto) -> bool:
    return t.data_location == TensorProto.EXTERNAL or len(t.external_data) > 0


def _line(e: BaseException) -> str:
    """onnx's or protobuf's complaint as one short line, what it quotes of the
    model (a domain, a name) escaped: ``clipped``."""
    return clipped(" ".join(str(e).split()) or type(e).__name__, 200)


def import_file(path: str, *, dims: Mapping[str, int] | None = None, values: Mapping[str, np.ndarray] | None = None) -> Imported:
    return import_model(load_model(path), path=path, dims=dims, values=values, name=default_name(path))


def import_model(
    model: ModelProto,
    *,
    path: str = "model.onnx",
    dims: Mapping[str, int] | None = None,
    values: Mapping[str, np.ndarray] | None = None,
    name: str | None = None,
) -> Imported:
    """The refc graph of ``model``. ``dims`` binds dynamic dimensions by name;
    ``values`` gives graph inputs' values by ONNX name (else seeds 0, 1, ...);
    an int64 input given a value (a shape or axes) becomes a constant."""
    try:
        return _import(model, dict(dims or {}), dict(values or {}), name or printable(model.graph.name)[:MAX_NAME] or "model")
    except Refused as e:
        raise refused(path, e) from None
    except LimitExceeded as e:  # a limit on the graph it makes (its nodes): the model's file leads the message
        if e.path is not None:
            raise
        raise LimitExceeded(str(e).removeprefix("the graph: "), path=path) from None


def _opset(model: ModelProto) -> int:
    versions = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    top = onnx.defs.onnx_opset_version()
    if "ai.onnx" not in versions:
        raise Refused("opset_import", "no opset of the default domain (ai.onnx)")
    v = versions["ai.onnx"]
    if not MIN_OPSET <= v <= top:
        raise Refused("opset_import", f"opset {v} is outside what refc imports ({MIN_OPSET} to {top})")
    return v


def _import(model: ModelProto, dims: dict[str, int], values: dict[str, np.ndarray], name: str) -> Imported:
    opset = _opset(model)
    g = model.graph
    if g.sparse_initializer:
        raise Refused(f"sparse initializer '{g.sparse_initializer[0].values.name}'", "sparse tensors are not supported")
    b = Builder()
    env: dict[str, Value] = {t.name: Value(None, None, tensor_array(t, f"initializer {shown(t.name)}")) for t in g.initializer}
    unknown = sorted(set(values) - {vi.name for vi in g.input if vi.name not in env})
    if unknown:
        raise Refused(f"input value '{unknown[0]}'", "names no graph input of the model")
    dynamic = sorted({d.dim_param for vi in (*g.input, *g.output) for d in vi.type.tensor_type.shape.dim if d.HasField("dim_param")})
    unbound = sorted(set(dims) - set(dynamic))
    if unbound:  # a misspelt name would be ignored, and the real one reported unbound
        some = f"it has {', '.join(map(shown, dynamic))}" if dynamic else "it has none"
        raise Refused(f"--dim {shown(unbound[0])}", f"names no dynamic dimension of the model's inputs or outputs ({some})")
    for vi in g.input:
        if vi.name in values and values[vi.name].dtype == np.int64:
            # a shape or axes fed as an input: fixed at import, as refc needs it
            env[vi.name] = Value(None, None, np.asarray(values[vi.name]))
    inputs = {}
    for k, vi in enumerate(vi for vi in g.input if vi.name not in env):
        env[vi.name] = _placeholder(b, vi, k, dims, values.get(vi.name))
        inputs[vi.name] = env[vi.name].ref
    outputs = {vi.name: b.namer.fresh(vi.name) for vi in g.output}
    for index, node in enumerate(g.node):
        _convert(b, node, index, env, opset)
    for vi in g.output:
        _output(b, vi, env, outputs[vi.name])
    graph = Graph(name=name, storage=tuple(b.storage), nodes=tuple(b.nodes))
    try:  # what is written must read back: names, shapes and ranks as a graph file holds them
        graph_from_doc(graph_to_doc(graph))
    except MalformedInput as e:
        raise Refused("the model", f"makes no valid refc graph: {e}") from None
    return Imported(graph=graph, inputs=inputs, outputs=outputs)  # type: ignore[arg-type]


def _placeholder(b: Builder, vi: onnx.ValueInfoProto, k: int, dims: dict[str, int], value: np.ndarray | None) -> Value:
    where = f"graph input '{vi.name}'"
    dtype = refc_dtype(vi.type.tensor_type.elem_type, where)
    t = TensorType(static_shape(vi, dims, where), dtype)
    if value is None:
        init = Init(seed=k)
    else:
        value = np.asarray(value)
        if value.shape != t.shape or value.dtype != np.dtype(dtype.value):
            raise Refused(where, f"its value is {value.dtype}{list(value.shape)}, the input is {t}")
        if not np.isfinite(value).all():
            raise Refused(where, "its value holds NaN or infinity; a graph file keeps finite values (give it to refc run --inputs)")
        init = Init(value=tuple(value.ravel().tolist()))
    return b.add_storage(b.namer.fresh(vi.name), StorageKind.PLACEHOLDER, t, init)


def _convert(b: Builder, node: onnx.NodeProto, index: int, env: dict[str, Value], opset: int) -> None:
    where = node_where(node.name, node.op_type, index)
    if node.domain not in ("", "ai.onnx"):
        raise Refused(where, f"domain '{node.domain}' is not one refc imports (only ai.onnx)")
    convert = CONVERTERS.get(node.op_type)
    if convert is None:
        raise Refused(where, f"op {node.op_type} is not one refc imports (it imports {', '.join(sorted(CONVERTERS))})")
    results = convert(OnnxNode(b, node, env, opset, where))
    if len(node.output) > len(results):
        raise Refused(where, f"{len(node.output)} outputs; refc's conversion gives {len(results)}")
    for k, out in enumerate(node.output):
        if out:  # an optional output left unnamed
            env[out] = results[k]


def _output(b: Builder, vi: onnx.ValueInfoProto, env: dict[str, Value], target: str) -> None:
    where = f"graph output '{vi.name}'"
    if vi.name not in env:
        raise Refused(where, "no node produces it")
    source = b.materialize(env[vi.name], vi.name, where)
    t = b.types[source]
    if not t.shape:
        raise Refused(where, "is 0-d (a scalar); refc storage has at least one dimension")
    b.add_storage(target, StorageKind.PLACEHOLDER, t, None)
    b.save(source, target)
