"""The graph file format ``refc-graph/1`` (DESIGN §10): load and dump.

``load_graph`` turns a file into a ``Graph`` or raises ``MalformedInput`` naming
the file, the JSON path and the field. The structure is checked against the
published schema (``refcompiler.graph_schema``); this module checks what needs
more than one field: duplicate names, that every reference names something,
init values against their storage's shape and dtype, sizes. The invariants
(G-1's arity, dtypes, shapes and attributes, OWN-*) are the verifier's job.
``graph_to_doc(graph_from_doc(d))`` gives back ``d`` for a document written in
canonical form (no empty ``attrs`` or ``state``).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np

from specs import AttrKind, Dtype, OpKind

from refcompiler import limits
from refcompiler.errors import MalformedInput
from refcompiler.files import json_bytes, read_json, write_atomic, write_json_atomic
from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind, freeze_attrs
from refcompiler.graph_schema import check_structure, json_type
from refcompiler.limits import key_step, shown
from refcompiler.spec import spec_of

__all__ = ["FORMAT", "load_graph", "read_json", "graph_from_doc", "default_name", "graph_to_doc", "dump_graph", "write_json_atomic", "write_atomic"]

FORMAT = "refc-graph/1"
_INT32 = (-(2**31), 2**31)

Fail = Callable[[str, str], MalformedInput]  # (field, message) -> the error to raise


def load_graph(path: str | os.PathLike[str]) -> Graph:
    return graph_from_doc(read_json(path), path=str(path))


def graph_from_doc(doc: Any, *, path: str | None = None) -> Graph:
    """Build a graph from a parsed ``refc-graph/1`` document."""
    check_structure(doc, path)
    limits.check("nodes", len(doc["nodes"]) + len(doc.get("storage", [])), "" if path else "the graph", path=path)
    fail = _failer(path)
    storage = tuple(_storage(fail, s, _where("storage", i, s), path) for i, s in enumerate(doc.get("storage", [])))
    nodes = tuple(_node(fail, n, _where("nodes", i, n)) for i, n in enumerate(doc["nodes"]))
    _check_names(fail, storage, nodes)
    _check_references(fail, storage, nodes)
    if not doc.get("name", "").isprintable():  # beyond the schema's pattern: a format character (U+202E, U+2028) prints unseen or breaks the line
        raise fail("name", "the graph's name must be one printable line of at most 200 characters")
    name = doc.get("name") or default_name(path)
    meta = tuple((k, v) for k, v in doc.items() if k not in ("format", "name", "storage", "nodes"))
    return Graph(name=name, storage=storage, nodes=nodes, meta=meta)


def _failer(path: str | None) -> Fail:
    def fail(where: str, message: str) -> MalformedInput:
        return MalformedInput(message, path=path, field=where)

    return fail


MAX_NAME = 200  # characters of a graph's name (the schema's maxLength)


def default_name(path: str | None) -> str:
    """The name of a graph whose file gives none: the file's name without its
    suffix, held to the rule for a ``name`` (one printable line of at most
    ``MAX_NAME`` characters): a character that is not printable (a control
    character, a byte that is not UTF-8 in the file name) is written as its escape."""
    stem = Path(path).stem if path else ""
    return limits.printable(stem)[:MAX_NAME] or "graph"


def _where(field: str, i: int, doc: dict[str, Any]) -> str:
    return f"{field}[{i}] ('{doc['name']}')"


def _check_names(fail: Fail, storage: tuple[Storage, ...], nodes: tuple[Node, ...]) -> None:
    """Names are unique across storage and nodes."""
    seen: dict[str, str] = {}
    places = [(f"storage[{i}] ('{s.name}')", s.name) for i, s in enumerate(storage)]
    places += [(f"nodes[{i}] ('{n.name}')", n.name) for i, n in enumerate(nodes)]
    for where, name in places:
        if name in seen:
            raise fail(where, f"duplicate name '{name}' (also {seen[name]})")
        seen[name] = where


def _check_references(fail: Fail, storage: tuple[Storage, ...], nodes: tuple[Node, ...]) -> None:
    """Every input, state operand, save target and owner names something."""
    storage_names = {s.name for s in storage}
    node_names = {n.name for n in nodes}
    for i, n in enumerate(nodes):
        where = f"nodes[{i}] ('{n.name}')"
        for k, ref in enumerate(n.inputs):
            if ref.name not in node_names and (ref.name not in storage_names or ref.index is not None):
                raise fail(f"{where}.inputs[{k}]", f"'{ref}' names no storage or node")
        for k, st in enumerate(n.state):
            if st not in storage_names:
                raise fail(f"{where}.state[{k}]", f"'{st}' names no storage")
        if n.op is OpKind.SAVE:
            target = dict(n.attrs).get("target")
            if not isinstance(target, str):
                raise fail(f"{where}.attrs.target", "a save needs a string 'target' naming a placeholder")
            if target not in storage_names:
                raise fail(f"{where}.attrs.target", f"{shown(target)} names no storage")
    for i, s in enumerate(storage):
        if s.owner is not None and s.owner not in node_names:
            raise fail(f"storage[{i}] ('{s.name}').owner", f"'{s.owner}' names no node")


def _storage(fail: Fail, doc: dict[str, Any], where: str, path: str | None) -> Storage:
    kind, dtype, shape = StorageKind(doc["kind"]), Dtype(doc["dtype"]), tuple(doc["shape"])
    limits.check("elements", math.prod(shape), f"{where}.shape", path=path)
    owner = doc.get("owner")
    if owner is not None and kind is not StorageKind.OWNED:
        raise fail(f"{where}.owner", f"only owned storage has an owner, this is {kind.value}")
    init = _init(fail, doc["init"], f"{where}.init", shape, dtype) if "init" in doc else None
    return Storage(name=doc["name"], kind=kind, dtype=dtype, shape=shape, init=init, owner=owner)


def _init(fail: Fail, doc: dict[str, Any], where: str, shape: tuple[int, ...], dtype: Dtype) -> Init:
    if "seed" not in doc:
        return Init(value=tuple(_values(fail, doc["value"], f"{where}.value", shape, dtype)))
    low, high = doc.get("low"), doc.get("high")
    if (low is not None or high is not None) and dtype is not Dtype.INT32:
        raise fail(where, "'low' and 'high' apply to integer storage only")
    low = 0 if low is None else low
    high = 1 if high is None else high
    if not low < high:
        raise fail(where, f"needs low < high, got [{low}, {high})")
    if not (_INT32[0] <= low and high <= _INT32[1]):
        raise fail(where, f"[{low}, {high}) does not fit int32")
    return Init(seed=doc["seed"], low=low, high=high)


def _values(fail: Fail, value: Any, where: str, shape: tuple[int, ...], dtype: Dtype) -> list[float | int]:
    """The elements of nested lists ``value``, row-major, which must have exactly
    ``shape``'s element counts and elements of ``dtype``."""
    flat: list[Any] = []

    def walk(v: Any, depth: int, at: str) -> None:
        if not isinstance(v, list):
            raise fail(at, f"expected a list at depth {depth}, got {json_type(v)}")
        if len(v) != shape[depth]:
            raise fail(at, f"has {len(v)} elements where the shape {list(shape)} needs {shape[depth]}")
        if depth + 1 == len(shape):
            flat.extend(v)  # the elements: checked below, all at once
            return
        for k, x in enumerate(v):
            walk(x, depth + 1, f"{at}[{k}]")

    walk(value, 0, where)
    if not _all_elements_of(flat, dtype):  # then find and name the first bad one
        for k, v in enumerate(flat):
            problem = _element_problem(v, dtype)
            if problem:
                raise fail(where + "".join(f"[{i}]" for i in np.unravel_index(k, shape)), problem)
    return flat if dtype is Dtype.INT32 else [float(v) for v in flat]


# a 64 MiB file of values took 16 s to read with one numpy conversion per element
_ELEMENT_TYPES = {Dtype.INT32: {int}, Dtype.FLOAT32: {int, float}}  # a bool's type is bool


def _all_elements_of(numbers: list[Any], dtype: Dtype) -> bool:
    """Whether every one of ``numbers`` is an element of ``dtype`` (``_element_problem``
    finds none), decided all at once with numpy."""
    if not set(map(type, numbers)) <= _ELEMENT_TYPES[dtype]:
        return False
    try:
        if dtype is Dtype.INT32:
            ints = np.array(numbers, dtype=np.int64)
            return bool(((_INT32[0] <= ints) & (ints < _INT32[1])).all())
        with np.errstate(over="ignore"):
            return bool(np.isfinite(np.array(numbers, dtype=np.float64).astype(np.float32)).all())
    except OverflowError:  # an int beyond int64 or float64 (10**400)
        return False


def _element_problem(v: Any, dtype: Dtype) -> str | None:
    """Why ``v`` is no element of ``dtype``, or ``None``."""
    if dtype is Dtype.INT32:
        if not isinstance(v, int) or isinstance(v, bool):
            return f"expected an integer element for {dtype.value}, got {json_type(v)}"
        if not _INT32[0] <= v < _INT32[1]:
            return f"{shown(v)} does not fit int32"
        return None
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return f"expected a number element for {dtype.value}, got {json_type(v)}"
    # json.loads accepts NaN and Infinity and reads 1e400 as inf; 1e39 becomes inf in float32
    if not _finite_float32(v):
        return f"{shown(v)} is not a finite float32"
    return None


def _finite_float32(v: float) -> bool:
    try:
        with np.errstate(over="ignore"):
            return bool(np.isfinite(np.float32(v)))
    except OverflowError:  # an int beyond float64 (10**400)
        return False


def _node(fail: Fail, doc: dict[str, Any], where: str) -> Node:
    attrs = doc.get("attrs", {})
    kinds = {a.name: a.kind for a in spec_of(OpKind(doc["op"])).attrs}
    for key, value in attrs.items():
        if not _finite(value):  # the schema allows JSON values; json.loads also reads NaN
            raise fail(f"{where}.attrs{key_step(key)}", f"unsupported value {shown(value)}")
        problem = _out_of_range(kinds.get(key), value)
        if problem:
            raise fail(f"{where}.attrs{key_step(key)}", problem)
    inputs = tuple(Ref.parse(x) for x in doc.get("inputs", []))
    return Node(name=doc["name"], op=OpKind(doc["op"]), inputs=inputs, state=tuple(doc.get("state", [])), attrs=freeze_attrs(attrs))


def _out_of_range(kind: AttrKind | None, v: Any) -> str | None:
    """Why an attribute's numbers do not fit what its kind holds (int32 for
    integers, a finite float32 for floats, at most ``MAX_RANK`` in a list),
    or ``None``. Whether the value has the kind at all is G-1's (the verifier)."""
    if kind is AttrKind.FLOAT and isinstance(v, (int, float)) and not isinstance(v, bool) and not _finite_float32(v):
        return f"{shown(v)} is not a finite float32"
    if kind in (AttrKind.INT, AttrKind.INT_LIST, AttrKind.AXES):
        items = v if isinstance(v, list) else [v]
        if isinstance(v, list) and len(v) > limits.MAX_RANK:
            return f"a list of {len(v)} numbers; a shape or axis list has at most {limits.MAX_RANK} (the rank limit)"
        for x in items:
            if isinstance(x, int) and not isinstance(x, bool) and not _INT32[0] <= x < _INT32[1]:
                return f"{shown(x)} does not fit int32"
    return None


def _finite(v: Any) -> bool:
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, list):
        return all(_finite(x) for x in v)
    return True


def graph_to_doc(graph: Graph) -> dict[str, Any]:
    """The canonical document of a graph."""
    doc: dict[str, Any] = {"format": FORMAT, "name": graph.name, "storage": [], "nodes": []}
    for s in graph.storage:
        sd: dict[str, Any] = {"name": s.name, "kind": s.kind.value, "dtype": s.dtype.value, "shape": list(s.shape)}
        if s.init is not None:
            if s.init.value is not None:
                sd["init"] = {"value": np.array(s.init.value, dtype=object).reshape(s.shape).tolist()}
            else:
                sd["init"] = {"seed": s.init.seed}
                if s.dtype is Dtype.INT32:
                    sd["init"].update(low=s.init.low, high=s.init.high)
        if s.owner is not None:
            sd["owner"] = s.owner
        doc["storage"].append(sd)
    for n in graph.nodes:
        nd: dict[str, Any] = {"name": n.name, "op": n.op.value}
        if n.inputs:
            nd["inputs"] = [str(ref) for ref in n.inputs]
        if n.state:
            nd["state"] = list(n.state)
        if n.attrs:
            nd["attrs"] = {k: _thaw(v) for k, v in n.attrs}
        doc["nodes"].append(nd)
    for k, v in graph.meta:
        doc[k] = v
    return doc


def _thaw(v: object) -> object:
    return [_thaw(x) for x in v] if isinstance(v, tuple) else v


def dump_graph(graph: Graph, path: str | os.PathLike[str]) -> None:
    """Write ``graph``'s document atomically; ``LimitExceeded``, and nothing
    written, when it is more than refc reads (``REFC_MAX_FILE_BYTES``): an
    imported model's initializers, written out as JSON numbers, take several
    times the bytes they took in the model."""
    data = json_bytes(graph_to_doc(graph))
    limits.check("file_bytes", len(data), "the graph file to write (refc would not read it back)", path=str(path))
    write_atomic(path, lambda f: f.write(data))
