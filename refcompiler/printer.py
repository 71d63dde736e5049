"""Human-readable text forms: a graph listing (``refc show``) and run summaries.

The listing works on any loaded graph, valid or not, so that ``refc show``
helps find out *why* a graph is invalid; a valid graph's listing also gives
every node result its type. Pictures (Graphviz DOT, SVG) are in
``refcompiler.pictures``. The text form is for reading, not parsing back: the
canonical, round-tripping form is the ``refc-graph/1`` JSON document
(``refcompiler.graph_json``).

Every op has an entry in ``OP_SYMBOLS`` (the short mark a picture shows under a
node's name); the spec-completeness test checks that none is missing.
"""

from __future__ import annotations

import hashlib
import json
from typing import Iterable, Mapping, Sequence

import numpy as np

from specs import Dtype, OpKind, TensorType

from refcompiler.errors import InternalError
from refcompiler.graph import Graph, Init, Node, Storage, StorageKind
from refcompiler.verifier import infer_types, violations

__all__ = [
    "OP_SYMBOLS",
    "graph_text",
    "op_symbol",
    "node_text",
    "init_text",
    "values_text",
    "checksum",
]

OP_SYMBOLS: dict[OpKind, str] = {
    OpKind.ADD: "+",
    OpKind.SUB: "-",
    OpKind.MUL: "*",
    OpKind.MAX: "max",
    OpKind.RELU: "relu",
    OpKind.NEG: "neg",
    OpKind.TANH: "tanh",
    OpKind.EXP: "exp",
    OpKind.IDENTITY: "copy",
    OpKind.MATMUL: "@",
    OpKind.TRANSPOSE: "transpose",
    OpKind.REDUCE_SUM: "sum",
    OpKind.CONCAT: "concat",
    OpKind.ROLL: "roll",
    OpKind.RESHAPE: "reshape (view)",
    OpKind.ADD_SUB: "+, -",
    OpKind.SGD_MOMENTUM: "sgd momentum",
    OpKind.QUANTIZATION_PROFILE: "quantization profile",
    OpKind.EMBEDDING_UPDATE: "embedding update",
    OpKind.ACCUMULATE: "acc +=",
    OpKind.SAVE: "save",
}

# Storage kinds in the order the text form lists them, with their headings.
_KIND_HEADINGS = (
    (StorageKind.CONSTANT, "constants"),
    (StorageKind.PLACEHOLDER, "placeholders"),
    (StorageKind.OWNED, "owned"),
)
_VALUES_SHOWN = 6  # elements of an explicit init value the text form prints
_PAD_LIMIT = 56  # the widest left column the text form pads to


def op_symbol(op: OpKind) -> str:
    try:
        return OP_SYMBOLS[op]
    except KeyError:
        raise InternalError(f"the printer has no entry for op '{op.value}'") from None


# ---------------------------------------------------------------- text form


def _json(value: object) -> str:
    """An attribute value as JSON (tuples are lists), the way the graph file spells it."""

    def thaw(v: object) -> object:
        return [thaw(x) for x in v] if isinstance(v, tuple) else v

    return json.dumps(thaw(value))


def init_text(storage: Storage) -> str:
    """How a storage gets its initial value: ``zeros``, ``seed 3``, ``seed 4 in [0, 6)``, ``value [...]``."""
    init: Init | None = storage.init
    if init is None:
        return "zeros"
    if init.value is not None:
        shown = ", ".join(_json(v) for v in init.value[:_VALUES_SHOWN])
        more = f", ... ({len(init.value)} values)" if len(init.value) > _VALUES_SHOWN else ""
        return f"value [{shown}{more}]"
    if storage.dtype is Dtype.INT32:
        return f"seed {init.seed} in [{init.low}, {init.high})"
    return f"seed {init.seed}"


def _type_text(storage: Storage) -> str:
    return str(TensorType(storage.shape, storage.dtype))


def _attrs_text(node: Node) -> str:
    """The attributes given in the file (defaults are not shown), in the spec's order."""
    given = dict(node.attrs)
    order = [a.name for a in node.spec.attrs if a.name in given]
    order += [k for k in given if k not in order]  # unknown ones too: show shows invalid graphs
    if not order:
        return ""
    return " {" + ", ".join(f"{k}={_json(given[k])}" for k in order) + "}"


def _state_text(graph: Graph, node: Node) -> str:
    if not node.state:
        return ""
    storages = [graph.storage_by_name.get(name) for name in node.state]
    if all(s is not None and s.kind is StorageKind.OWNED and s.owner == node.name for s in storages):
        return f"state: {', '.join(node.state)} (owned)"
    parts = []
    for name, s in zip(node.state, storages, strict=True):
        if s is None:
            parts.append(f"{name} (no such storage)")
        elif s.kind is StorageKind.OWNED and s.owner == node.name:
            parts.append(f"{name} (owned)")
        elif s.kind is StorageKind.OWNED:
            parts.append(f"{name} (owned by {s.owner})")
        else:
            parts.append(f"{name} ({s.kind.value})")
    return "state: " + ", ".join(parts)


def node_text(graph: Graph, node: Node) -> str:
    """The node's own line without annotations: ``name = op(inputs) {attrs}`` or ``save x -> A``."""
    inputs = ", ".join(str(r) for r in node.inputs)
    if node.op is OpKind.SAVE:
        return f"save {inputs} -> {node.attr('target')}"
    return f"{node.name} = {node.op.value}({inputs}){_attrs_text(node)}"


def _result_types(node: Node, types: Mapping[tuple[str, int], TensorType] | None) -> str:
    if types is None:
        return ""
    found = [(k, types[(node.name, k)]) for k in range(len(node.spec.results)) if (node.name, k) in types]
    if not found:
        return ""
    if len(found) == 1 and len(node.spec.results) == 1:
        return f": {found[0][1]}"
    return ": " + ", ".join(f"{node.name}:{k} {t}" for k, t in found)


def _table(rows: Iterable[Sequence[str]], indent: str = "  ") -> list[str]:
    """Rows of cells, each column but the last padded to its widest cell (capped)."""
    rows = [list(r) for r in rows]
    ncols = max((len(r) for r in rows), default=0)
    widths = [min(max((len(r[c]) for r in rows if c < len(r)), default=0), _PAD_LIMIT) for c in range(ncols)]
    out = []
    for r in rows:
        cells = [cell.ljust(widths[c]) if c < len(r) - 1 else cell for c, cell in enumerate(r)]
        out.append((indent + "  ".join(cells)).rstrip())
    return out


def graph_text(graph: Graph) -> str:
    """The readable listing of a graph.

    Storage comes grouped by kind (constants, placeholders, owned) with type,
    initial value and, for owned variables, the owner. Nodes come in creation
    order as ``name = op(inputs) {attrs}``, annotated with their result types
    (when the graph is valid) and with the state they own
    (``state: minmax, hist (owned)``); a save reads ``save x -> A`` followed by
    its node name. An invalid graph ends with its violations, one per line.
    """
    found = violations(graph)
    types = infer_types(graph) if not found else None
    lines = [f"graph {graph.name}: {len(graph.storage)} storage, {len(graph.nodes)} nodes"]
    for kind, heading in _KIND_HEADINGS:
        members = [s for s in graph.storage if s.kind is kind]
        if not members:
            continue
        lines.append("")
        lines.append(f"{heading}:")
        rows = []
        for s in members:
            row = [s.name, _type_text(s), init_text(s)]
            if kind is StorageKind.OWNED:
                row.append(f"owner {s.owner}" if s.owner is not None else "NO OWNER")
            rows.append(row)
        lines.extend(_table(rows))
    lines.append("")
    lines.append("nodes:")
    rows = []
    for node in graph.nodes:
        notes = []
        if node.op is OpKind.SAVE:
            notes.append(f"(node {node.name})")
        else:
            notes.append(_result_types(node, types))
            notes.append(_state_text(graph, node))
        rows.append((node_text(graph, node), "  ".join(n for n in notes if n)))
    lines.extend(_table(rows) if rows else ["  (none)"])
    if found:
        lines.append("")
        lines.append("violations:")
        lines.extend(f"  {v.invariant}: {v.detail}" for v in found)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- run values


def checksum(array: np.ndarray) -> str:
    """A short digest of an array's dtype, shape and bytes: equal digests, equal bits."""
    h = hashlib.sha256()
    h.update(f"{array.dtype.str}{array.shape}".encode())
    h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()[:12]


def _few_values(array: np.ndarray, count: int = 4) -> str:
    flat = array.ravel()
    if array.dtype.kind == "f":
        shown = [f"{float(x):.6g}" for x in flat[:count]]
    else:
        shown = [str(int(x)) for x in flat[:count]]
    more = ", ..." if flat.size > count else ""
    return "[" + ", ".join(shown) + more + "]"


def values_text(graph: Graph, values: Mapping[str, np.ndarray]) -> str:
    """One line per storage in ``values`` (graph order): name, kind, type, a few values, checksum."""
    rows = []
    for s in graph.storage:
        if s.name not in values:
            continue
        array = values[s.name]
        rows.append([s.name, s.kind.value, f"{array.dtype}{list(array.shape)}", f"sha256:{checksum(array)}", _few_values(array)])
    return "\n".join(_table(rows)) + "\n"
