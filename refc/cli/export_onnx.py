"""``refc export G [-o model.onnx]``: a refc graph as an ONNX model.

Placeholders become graph inputs and, when saved, outputs named ``NAME.exit``
carrying their value at exit; owned state becomes a state input and a state
output. The model is checked (``onnx.checker``, strict shape inference) before
it is written. An invalid graph is exit 1 (one line per violation); a
malformed file exit 2; without the ``onnx`` extra, exit 2 naming the pip command.
"""

from __future__ import annotations

import argparse

from refc.cli.common import add_graph_argument, derived_out, file_path, load
from refcompiler.errors import InternalError, UsageError
from refcompiler.onnx_io import require_onnx


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export a refc graph as an ONNX model")
    add_graph_argument(p)
    p.add_argument("-o", "--out", type=file_path, metavar="model.onnx", default=None, help="the model file to write (default: the graph file's path with .onnx)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    require_onnx()
    import onnx

    from refcompiler.onnx_io.exporter import export_graph, exit_names, write_model
    from refcompiler.verifier import violations

    out = derived_out(args.graph, args.out, ".onnx")  # before any work
    graph = load(args)
    found = violations(graph)
    for v in found:
        print(f"{args.graph}: {v.invariant}: {v.detail}")
    if found:
        return 1
    model = export_graph(graph)
    try:
        onnx.checker.check_model(model, full_check=True)
    except onnx.checker.ValidationError as e:  # the exporter wrote a wrong model: a bug in refc
        raise InternalError(f"the exported model fails onnx.checker: {' '.join(str(e).split())}") from None
    try:
        write_model(model, out)
    except OSError as e:
        raise UsageError(f"cannot write {out}: {e.strerror or e}") from None
    print(f"{args.graph}: wrote {out} ({len(model.graph.node)} ONNX nodes, opset {model.opset_import[0].version})")
    for name, storage in exit_names(graph).items():
        print(f"  output {name!r} <- {storage} at exit")
    return 0
