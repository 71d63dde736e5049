"""``refc bench --onnx``: ONNX's node tests, conformance per op.

Every node test of the installed ``onnx`` whose ops refc imports is imported
and run by the reference and by the compiled O2 pipeline, and compared with
ONNX's expected outputs (``refcompiler.onnx_io.conformance``): per op, the
cases collected, supported and passed, and the reason of every unsupported one.
Needs the ``onnx`` extra (exit 2 naming the pip command without it).
"""

from __future__ import annotations

import argparse
from typing import Any

from refcompiler.onnx_io import require_onnx

__all__ = ["add_arguments", "measure", "render"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options of its own."""


def measure(args: argparse.Namespace) -> dict[str, Any]:
    require_onnx()
    from refcompiler.onnx_io import conformance

    return conformance.table(conformance.run_all())


def render(data: dict[str, Any]) -> str:
    from refcompiler.onnx_io.conformance import render as render_table

    return render_table(data)
