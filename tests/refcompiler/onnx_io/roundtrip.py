"""Running an exported model with onnx.reference, carrying state over runs."""

from __future__ import annotations

import numpy as np
from onnx.reference import ReferenceEvaluator

from refcompiler.graph import Graph
from refcompiler.onnx_io.exporter import exit_names, export_graph
from refcompiler.values import Values, initial_values


def run_exported(graph: Graph, *, runs: int = 2) -> list[Values]:
    """The placeholders and owned variables after each run of the exported model:
    a saved placeholder's or owned variable's exit value is fed back as the next run's input."""
    model = export_graph(graph)
    evaluator = ReferenceEvaluator(model)
    exits = exit_names(graph)
    values = initial_values(graph)
    out = []
    with np.errstate(all="ignore"):
        for _ in range(runs):
            results = evaluator.run(None, dict(values))
            values = {**values, **{exits[o.name]: np.asarray(r) for o, r in zip(model.graph.output, results, strict=True)}}
            out.append(dict(values))
    return out
