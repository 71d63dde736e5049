"""The graph file format ``refc-graph/1`` (DESIGN §10): load and dump.

``load_graph`` turns a file into a ``Graph`` or raises ``MalformedInput`` naming
the file and the field; it checks the document's structure and that every
reference names something. The invariants (G-1's arity, dtypes, shapes and
attributes, OWN-*) are the verifier's job. ``graph_to_doc(graph_from_doc(d))``
gives back ``d`` for a document written in canonical form (no empty ``attrs``
or ``state``).
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Callable

import numpy as np

from specs import Dtype, OpKind

from refcompiler.errors import MalformedInput
from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind, freeze_attrs

__all__ = ["FORMAT", "load_graph", "read_json", "graph_from_doc", "graph_to_doc", "dump_graph", "write_json_atomic", "write_atomic"]

FORMAT = "refc-graph/1"
# A reference compiler runs small graphs; larger storage is a mistake, not a workload.
MAX_ELEMENTS = 1 << 24
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


def read_json(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON file; any failure is a ``MalformedInput`` naming the file."""
    p = str(path)
    try:
        text = Path(p).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise MalformedInput("no such file", path=p) from None
    except (OSError, UnicodeDecodeError) as e:
        raise MalformedInput(f"cannot read: {e}", path=p) from None
    if not text.strip():
        raise MalformedInput("the file is empty", path=p)
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as e:
        raise MalformedInput(f"duplicate key {e.key!r} in one JSON object (JSON keeps only the last)", path=p) from None
    except json.JSONDecodeError as e:
        raise MalformedInput(f"not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})", path=p) from None
    except RecursionError:
        # json.loads recurses once per nesting level; no graph nests this deep
        raise MalformedInput("JSON nested too deeply", path=p) from None


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads keeps the last of two equal keys: a second "nodes" would hide the first
    doc: dict[str, Any] = {}
    for key, value in pairs:
        if key in doc:
            raise _DuplicateKey(key)
        doc[key] = value
    return doc


def load_graph(path: str | os.PathLike[str]) -> Graph:
    return graph_from_doc(read_json(path), path=str(path))


class _Reader:
    """Typed field access that reports ``path: field: problem``."""

    def __init__(self, path: str | None):
        self.path = path

    def fail(self, where: str, message: str) -> MalformedInput:
        return MalformedInput(message, path=self.path, field=where)

    def get(self, obj: dict[str, Any], key: str, where: str, types: type | tuple[type, ...], *, required: bool = True) -> Any:
        if key not in obj:
            if required:
                raise self.fail(where, f"missing field '{key}'")
            return None
        value = obj[key]
        if not _is(value, types):
            raise self.fail(f"{where}.{key}", f"expected {_type_name(types)}, got {_json_type(value)}")
        return value

    def name(self, obj: dict[str, Any], where: str) -> str:
        name = self.get(obj, "name", where, str)
        if not _NAME.match(name):
            raise self.fail(f"{where}.name", f"{name!r} is not a valid name (letters, digits, _ . -; no ':')")
        return name

    def enum(self, obj: dict[str, Any], key: str, where: str, enum_type: Any) -> Any:
        value = self.get(obj, key, where, str)
        try:
            return enum_type(value)
        except ValueError:
            known = ", ".join(e.value for e in enum_type)
            raise self.fail(f"{where}.{key}", f"unknown {key} {value!r} (known: {known})") from None

    def only(self, obj: dict[str, Any], where: str, allowed: set[str]) -> None:
        extra = sorted(set(obj) - allowed)
        if extra:
            raise self.fail(where, f"unknown field '{extra[0]}' (allowed: {', '.join(sorted(allowed))})")


def _is(value: Any, types: type | tuple[type, ...]) -> bool:
    types = types if isinstance(types, tuple) else (types,)
    if isinstance(value, bool) and bool not in types:
        return False
    if float in types and isinstance(value, int) and not isinstance(value, bool):
        return True
    return isinstance(value, types)


def _type_name(types: type | tuple[type, ...]) -> str:
    types = types if isinstance(types, tuple) else (types,)
    names = {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number", bool: "true or false"}
    return " or ".join(names.get(t, t.__name__) for t in types)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number"}.get(
        type(value), type(value).__name__
    )


def graph_from_doc(doc: Any, *, path: str | None = None) -> Graph:
    """Build a graph from a parsed ``refc-graph/1`` document."""
    r = _Reader(path)
    if not isinstance(doc, dict):
        raise MalformedInput(f"the top level must be an object, got {_json_type(doc)}", path=path)
    fmt = r.get(doc, "format", "format", str) if "format" in doc else None
    if fmt is None:
        raise r.fail("format", f"missing field 'format' (expected {FORMAT!r})")
    if fmt != FORMAT:
        raise r.fail("format", f"unsupported format version {fmt!r} (this refc reads {FORMAT!r})")
    name = r.get(doc, "name", "name", str, required=False) or (Path(path).stem if path else "graph")
    storage_docs = r.get(doc, "storage", "storage", list, required=False) or []
    node_docs = r.get(doc, "nodes", "nodes", list)

    storage = tuple(_storage(r, s, f"storage[{i}]") for i, s in enumerate(storage_docs))
    nodes = tuple(_node(r, n, f"nodes[{i}]") for i, n in enumerate(node_docs))

    seen: dict[str, str] = {}
    for i, s in enumerate(storage):
        where = f"storage[{i}] ('{s.name}')"
        if s.name in seen:
            raise r.fail(where, f"duplicate name '{s.name}' (also {seen[s.name]})")
        seen[s.name] = where
    for i, n in enumerate(nodes):
        where = f"nodes[{i}] ('{n.name}')"
        if n.name in seen:
            raise r.fail(where, f"duplicate name '{n.name}' (also {seen[n.name]})")
        seen[n.name] = where

    storage_names = {s.name for s in storage}
    node_names = {n.name for n in nodes}
    for i, n in enumerate(nodes):
        where = f"nodes[{i}] ('{n.name}')"
        for k, ref in enumerate(n.inputs):
            if ref.name not in node_names and (ref.name not in storage_names or ref.index is not None):
                raise r.fail(f"{where}.inputs[{k}]", f"'{ref}' names no storage or node")
        for k, st in enumerate(n.state):
            if st not in storage_names:
                raise r.fail(f"{where}.state[{k}]", f"'{st}' names no storage")
        if n.op is OpKind.SAVE:
            target = dict(n.attrs).get("target")
            if not isinstance(target, str):
                raise r.fail(f"{where}.attrs.target", "a save needs a string 'target' naming a placeholder")
            if target not in storage_names:
                raise r.fail(f"{where}.attrs.target", f"'{target}' names no storage")
    for i, s in enumerate(storage):
        if s.owner is not None and s.owner not in node_names:
            raise r.fail(f"storage[{i}] ('{s.name}').owner", f"'{s.owner}' names no node")

    meta = tuple((k, v) for k, v in doc.items() if k not in ("format", "name", "storage", "nodes"))
    return Graph(name=name, storage=storage, nodes=nodes, meta=meta)


def _storage(r: _Reader, doc: Any, where: str) -> Storage:
    if not isinstance(doc, dict):
        raise r.fail(where, f"expected an object, got {_json_type(doc)}")
    name = r.name(doc, where)
    where = f"{where} ('{name}')"
    r.only(doc, where, {"name", "kind", "dtype", "shape", "init", "owner"})
    kind = r.enum(doc, "kind", where, StorageKind)
    dtype = r.enum(doc, "dtype", where, Dtype)
    shape_doc = r.get(doc, "shape", where, list)
    if not shape_doc:
        raise r.fail(f"{where}.shape", "a storage shape needs at least one dimension")
    for k, d in enumerate(shape_doc):
        if not _is(d, int):
            raise r.fail(f"{where}.shape[{k}]", f"expected an integer, got {_json_type(d)}")
        if d < 1:
            raise r.fail(f"{where}.shape[{k}]", f"dimension {d} is below 1")
    shape = tuple(shape_doc)
    if math.prod(shape) > MAX_ELEMENTS:
        raise r.fail(f"{where}.shape", f"{math.prod(shape)} elements is more than refc handles ({MAX_ELEMENTS})")
    owner = r.get(doc, "owner", where, str, required=False)
    if owner is not None and kind is not StorageKind.OWNED:
        raise r.fail(f"{where}.owner", f"only owned storage has an owner, this is {kind.value}")
    init = _init(r, doc.get("init"), f"{where}.init", shape, dtype) if "init" in doc else None
    return Storage(name=name, kind=kind, dtype=dtype, shape=shape, init=init, owner=owner)


def _init(r: _Reader, doc: Any, where: str, shape: tuple[int, ...], dtype: Dtype) -> Init:
    if not isinstance(doc, dict):
        raise r.fail(where, f"expected an object with 'seed' or 'value', got {_json_type(doc)}")
    r.only(doc, where, {"seed", "value", "low", "high"})
    if ("seed" in doc) == ("value" in doc):
        raise r.fail(where, "give exactly one of 'seed' and 'value'")
    if "seed" in doc:
        seed = r.get(doc, "seed", where, int)
        if seed < 0:
            raise r.fail(f"{where}.seed", f"seed {seed} is negative")
        low = r.get(doc, "low", where, int, required=False)
        high = r.get(doc, "high", where, int, required=False)
        if (low is not None or high is not None) and dtype is not Dtype.INT32:
            raise r.fail(where, "'low' and 'high' apply to integer storage only")
        low = 0 if low is None else low
        high = 1 if high is None else high
        if not low < high:
            raise r.fail(where, f"needs low < high, got [{low}, {high})")
        if not (-(2**31) <= low and high <= 2**31):
            raise r.fail(where, f"[{low}, {high}) does not fit int32")
        return Init(seed=seed, low=low, high=high)
    flat: list[float | int] = []

    def walk(v: Any, depth: int, at: str) -> None:
        if depth < len(shape):
            if not isinstance(v, list):
                raise r.fail(at, f"expected a list at depth {depth}, got {_json_type(v)}")
            if len(v) != shape[depth]:
                raise r.fail(at, f"has {len(v)} elements where the shape {list(shape)} needs {shape[depth]}")
            for k, x in enumerate(v):
                walk(x, depth + 1, f"{at}[{k}]")
            return
        want: type | tuple[type, ...] = int if dtype is Dtype.INT32 else float
        if not _is(v, want):
            raise r.fail(at, f"expected {_type_name(want)} element for {dtype.value}, got {_json_type(v)}")
        if dtype is Dtype.INT32 and not -(2**31) <= v < 2**31:
            raise r.fail(at, f"{v} does not fit int32")
        # json.loads accepts NaN and Infinity and reads 1e400 as inf; 1e39 becomes inf in float32
        if dtype is Dtype.FLOAT32 and not _finite_float32(v):
            raise r.fail(at, f"{v} is not a finite float32")
        flat.append(v if dtype is Dtype.INT32 else float(v))

    walk(doc["value"], 0, f"{where}.value")
    return Init(value=tuple(flat))


def _finite_float32(v: float) -> bool:
    with np.errstate(over="ignore"):
        return bool(np.isfinite(np.float32(v)))


def _node(r: _Reader, doc: Any, where: str) -> Node:
    if not isinstance(doc, dict):
        raise r.fail(where, f"expected an object, got {_json_type(doc)}")
    name = r.name(doc, where)
    where = f"{where} ('{name}')"
    r.only(doc, where, {"name", "op", "inputs", "state", "attrs"})
    op = r.enum(doc, "op", where, OpKind)
    inputs_doc = r.get(doc, "inputs", where, list, required=False) or []
    inputs = []
    for k, x in enumerate(inputs_doc):
        if not isinstance(x, str) or not x:
            raise r.fail(f"{where}.inputs[{k}]", f"expected a name, got {_json_type(x)}")
        inputs.append(Ref.parse(x))
    state_doc = r.get(doc, "state", where, list, required=False) or []
    for k, x in enumerate(state_doc):
        if not isinstance(x, str):
            raise r.fail(f"{where}.state[{k}]", f"expected a storage name, got {_json_type(x)}")
    attrs_doc = r.get(doc, "attrs", where, dict, required=False) or {}
    for key, value in attrs_doc.items():
        if not _json_value(value):
            raise r.fail(f"{where}.attrs.{key}", f"unsupported value {value!r}")
    return Node(name=name, op=op, inputs=tuple(inputs), state=tuple(state_doc), attrs=freeze_attrs(attrs_doc))


def _json_value(v: Any) -> bool:
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, list):
        return all(_json_value(x) for x in v)
    return v is None or isinstance(v, (bool, int, str))


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


def write_atomic(path: str | os.PathLike[str], write: Callable[[BinaryIO], None]) -> None:
    """Call ``write`` on a temporary file beside ``path``, then rename it into place,
    so that an interrupted write leaves no half-written file.

    Missing parent directories are created. The file gets the permissions a
    plain ``open`` would give (the umask), not ``mkstemp``'s 0600. A ``path``
    that exists and is not a regular file (``/dev/null``, a pipe) is written
    directly: renaming over it would replace the device, not write to it.
    Raises ``OSError``.
    """
    target = Path(os.path.realpath(path))  # through a symlink to the file it names
    if target.exists() and not target.is_file():
        if target.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        with open(target, "wb") as f:
            write(f)
        return
    for parent in (target.parent, *target.parent.parents):
        if parent.exists():
            if not parent.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, f"{parent} is not a directory", str(parent))
            break
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)  # the only way to read it is to set it
    os.umask(mask)
    return mask


def write_json_atomic(path: str | os.PathLike[str], doc: Any) -> None:
    """Write ``doc`` as JSON through ``write_atomic``."""
    text = json.dumps(doc, indent=1) + "\n"
    write_atomic(path, lambda f: f.write(text.encode("utf-8")))


def dump_graph(graph: Graph, path: str | os.PathLike[str]) -> None:
    write_json_atomic(path, graph_to_doc(graph))
