"""ONNX in and out (issue 13): import a model as a refc graph, export a graph as a model.

``onnx`` is an optional extra (``pip install -e '.[onnx]'``): nothing in
``refcompiler`` outside this package imports it, and this ``__init__`` does
not either, so ``require_onnx`` can say what to install. The modules:

- ``errors``: the one-line refusals (exit 2) of an import;
- ``types``: dtypes, shapes and names shared by both directions;
- ``converters``: ONNX op -> refc nodes, one function per op (``CONVERTERS``);
- ``importer``: reading a model file, its initializers, inputs and outputs;
- ``lowerings``: refc op -> ONNX nodes, one function per op (``LOWERINGS``);
- ``exporter``: a graph's storage as inputs, outputs and initializers;
- ``compare``: the ULP distance the comparisons use and their stated bounds;
- ``conformance``: ONNX's own node tests, run through the importer.
"""

from __future__ import annotations

from refcompiler.errors import UsageError

__all__ = ["PIP_COMMAND", "require_onnx"]

PIP_COMMAND = "python3 -m pip install -e '.[onnx]'"


def require_onnx() -> None:
    """Raise ``UsageError`` (exit 2) naming the pip command when ``onnx`` is missing."""
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise UsageError(f"ONNX support needs the optional 'onnx' extra: {PIP_COMMAND}") from None
