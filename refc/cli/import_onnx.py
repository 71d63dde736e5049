"""``refc import model.onnx [-o G.json] [--dim NAME=SIZE ...] [--inputs F.npz]``: an ONNX model as a refc graph.

Writes the graph (default: the model's name with ``.json``) and prints which
placeholder holds each ONNX input and output. ``--dim`` binds a dynamic
dimension; ``--inputs`` gives graph inputs' values by ONNX name (an int64
shape or axes input becomes a constant). A model refc cannot express exactly is
refused: exit 2, one line naming the node, its op and why. Without the
``onnx`` extra installed: exit 2 naming the pip command.
"""

from __future__ import annotations

import argparse

from refc.cli.common import derived_out, file_path, whole
from refcompiler.errors import UsageError
from refcompiler.limits import shown
from refcompiler.onnx_io import require_onnx


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import", help="import an ONNX model as a refc graph")
    p.add_argument("model", type=file_path, metavar="model.onnx", help="the ONNX model file")
    p.add_argument("-o", "--out", type=file_path, metavar="G.json", default=None, help="the graph file to write (default: the model's name with .json)")
    p.add_argument("--dim", action="append", default=[], type=_dim, metavar="NAME=SIZE", help="bind a dynamic dimension (repeatable)")
    p.add_argument("--inputs", type=file_path, metavar="F.npz", default=None, help="graph inputs' values by ONNX name (default: seeded)")
    p.set_defaults(func=run)


def _dim(text: str) -> tuple[str, int]:
    name, sep, text_size = text.partition("=")
    size = whole(text_size)
    if not sep or not name or size is None or not 1 <= size <= _MAX_DIM:
        raise argparse.ArgumentTypeError(f"expected NAME=SIZE with SIZE a whole number from 1 to {_MAX_DIM}, got {shown(text)}")
    return name, size


_MAX_DIM = 2**31 - 1  # a graph file's largest dimension (refcompiler.onnx_io.types.MAX_DIM: onnx is not imported to build the parser)


def run(args: argparse.Namespace) -> int:
    require_onnx()
    from refcompiler.graph_json import dump_graph
    from refcompiler.onnx_io.importer import import_file
    from refcompiler.values import load_npz

    dims = dict(args.dim)
    if len(dims) != len(args.dim):
        raise UsageError("--dim binds each name once")
    out = derived_out(args.model, args.out, ".json")  # before any work
    values = load_npz(args.inputs) if args.inputs else None
    imported = import_file(args.model, dims=dims, values=values)
    try:
        dump_graph(imported.graph, out)
    except OSError as e:
        raise UsageError(f"cannot write {out}: {e.strerror or e}") from None
    g = imported.graph
    print(f"{args.model}: wrote {out} ({len(g.nodes)} nodes, {len(g.storage)} storage)")
    for what, names in (("input", imported.inputs), ("output", imported.outputs)):
        for onnx_name, placeholder in names.items():
            print(f"  {what} {onnx_name!r} -> placeholder {placeholder}")
    return 0
