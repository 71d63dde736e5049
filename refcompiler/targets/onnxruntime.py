"""The ``onnxruntime`` target (CPU execution provider), through the ONNX export.

The program is ``refcompiler.onnx_io.exporter.export_graph``'s model: every
placeholder and owned variable an input, saved placeholders and owned variables
also outputs ``NAME.exit`` (metadata ``refc.exits`` says which output holds which
storage). A run feeds the values at entry and takes the exit values back; the
harness carries them into the next run.

Configurations: the full product of the graph optimisation level (``disable``,
``basic``, ``extended``, ``all``), ``enable_mem_pattern`` and
``enable_cpu_mem_arena`` on and off, and sequential or parallel execution: 32
(``onnxruntime-pairs``: 8 that still cover every pair of settings).
Every session runs one intra-op and one inter-op thread: a kernel's result then does
not depend on how the machine's cores are shared, and parallel execution still goes
through onnxruntime's parallel executor (its own ready queue and order of nodes)
without paying for waking threads on every run.
A configuration's ``level`` is its optimisation level: memory planning, the arena
and the execution mode must not change a single bit (onnxruntime promises that
memory reuse is invisible, and the kernels are the same); optimisation levels may
fuse or rewrite ops (e.g. MatMul+Add into Gemm, whose bias is added in another
order), so across levels only the per-op bounds of ``refcompiler.targets.bounds``
are owed.

Sessions are made once per configuration for a case (``execute`` runs each one
twice) and hold the serialized model, so no file is written.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from refcompiler.graph import Graph
from refcompiler.targets.base import Configuration, Refused, first_missing
from refcompiler.values import Values

__all__ = ["TARGET", "PAIRS", "OnnxruntimeTarget", "LEVELS"]

LEVELS = ("disable", "basic", "extended", "all")
_ORT_LEVEL = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED", "all": "ORT_ENABLE_ALL"}


@dataclass(frozen=True)
class Program:
    """The exported model: its bytes, output name -> storage, and the input names."""

    model: bytes
    exits: tuple[tuple[str, str], ...]
    inputs: tuple[str, ...]


class OrtSession:
    def __init__(self, program: Program, config: Configuration):
        import onnxruntime as ort

        self.session = ort.InferenceSession(program.model, session_options(config), providers=["CPUExecutionProvider"])
        self.program = program
        self.outputs = [o for o, _ in program.exits]

    def run(self, values: Values) -> Mapping[str, np.ndarray]:
        feeds = {name: values[name] for name in self.program.inputs}
        got = self.session.run(self.outputs, feeds)
        return {storage: array for (_, storage), array in zip(self.program.exits, got)}


def session_options(config: Configuration) -> Any:
    """The ``onnxruntime.SessionOptions`` of ``config``."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, _ORT_LEVEL[config.level])
    so.enable_mem_pattern = config.option("mem_pattern")
    so.enable_cpu_mem_arena = config.option("arena")
    parallel = config.option("mode") == "parallel"
    so.execution_mode = ort.ExecutionMode.ORT_PARALLEL if parallel else ort.ExecutionMode.ORT_SEQUENTIAL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3  # errors only: warnings about unused initializers are noise
    return so


def _config(level: str, mem_pattern: bool, arena: bool, mode: str) -> Configuration:
    onoff = {True: "on", False: "off"}
    key = f"{level}.mem_pattern={onoff[mem_pattern]}.arena={onoff[arena]}.{mode}"
    return Configuration(key, level, (("mem_pattern", mem_pattern), ("arena", arena), ("mode", mode)))


# Every pair of settings (level x mem_pattern, mem_pattern x arena, arena x mode, ...)
# appears in one of these 8, and each level has two configurations differing in
# every memory and execution setting.
_PAIRWISE = (
    ("disable", True, True, "sequential"), ("disable", False, False, "parallel"),
    ("basic", True, False, "sequential"), ("basic", False, True, "parallel"),
    ("extended", True, True, "parallel"), ("extended", False, False, "sequential"),
    ("all", True, False, "parallel"), ("all", False, True, "sequential"),
)  # fmt: skip


class OnnxruntimeTarget:
    """``pairwise``: the 8 configurations of ``_PAIRWISE`` instead of all 32
    (built-in target ``onnxruntime-pairs``: four times the graphs per second)."""

    requirement = "python3 -m pip install -e '.[ort]'  (onnx and onnxruntime)"

    def __init__(self, pairwise: bool = False):
        self.pairwise = pairwise
        self.name = "onnxruntime-pairs" if pairwise else "onnxruntime"

    def missing(self) -> str | None:
        return first_missing("onnx", "onnxruntime")

    def configurations(self) -> tuple[Configuration, ...]:
        if self.pairwise:
            return tuple(_config(*p) for p in _PAIRWISE)
        product = itertools.product(LEVELS, (True, False), (True, False), ("sequential", "parallel"))
        return tuple(_config(*p) for p in product)

    def build(self, graph: Graph) -> Program | Refused:
        from refcompiler.onnx_io.exporter import export_graph, exit_names

        try:
            model = export_graph(graph)
        except Exception as e:  # refc's exporter, not the target: not a finding about onnxruntime
            # (seen: a transpose whose perm is empty makes onnx.helper raise ValueError)
            return Refused(f"refc's ONNX exporter cannot export the graph: {type(e).__name__}: {e}")
        if not model.graph.output:  # no save, no owned state: onnxruntime needs an output
            return Refused("the graph writes nothing (no save, no owned variable): an ONNX model needs an output")
        inputs = tuple(i.name for i in model.graph.input)
        return Program(model.SerializeToString(), tuple(exit_names(graph).items()), inputs)

    def session(self, program: Program, config: Configuration) -> OrtSession:
        return OrtSession(program, config)

    def versions(self) -> dict[str, str]:
        import onnx
        import onnxruntime

        return {"onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__, "numpy": np.__version__}

    def bug_files(self, program: Program, failing: Configuration, passing: Configuration | None) -> dict[str, bytes]:
        """``model.onnx``, ``repro.py`` (``refcompiler.targets.repro_script``) and its
        configuration part ``ort_config.json``."""
        from refcompiler.targets.repro_script import config_json, ort_script

        def doc(c: Configuration | None) -> Any:
            return None if c is None else {"key": c.key, "graph_optimization_level": _ORT_LEVEL[c.level], **dict(c.options)}

        config = config_json(program.exits, program.inputs, doc(failing), doc(passing))
        return {"model.onnx": program.model, "ort_config.json": config, "repro.py": ort_script().encode()}


TARGET = OnnxruntimeTarget()
PAIRS = OnnxruntimeTarget(pairwise=True)
