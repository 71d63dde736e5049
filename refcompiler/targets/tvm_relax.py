"""The ``tvm`` target: TVM Relax on the CPU (LLVM), through the ONNX export (the
``tvm`` extra: ``pip install 'apache-tvm>=0.27,<0.28'``).

The program is ``refcompiler.onnx_io.exporter.export_graph``'s model (every
placeholder and owned variable an input, saved placeholders and owned variables
also outputs ``NAME.exit``), imported once per graph with
``tvm.relax.frontend.onnx.from_onnx`` and built per configuration with
``tvm.relax.build(mod, "llvm", relax_pipeline=...)``; a run calls the relax VM's
``main`` and the harness carries the exit values into the next run.

Memory is handed over without copies, so that aliasing shows: an input is fed
as a 64-byte aligned buffer (TVM refuses less through DLPack) that the target
sees as its own; whatever the target wrote into it is written back into the
caller's array afterwards, so the harness sees a write into an input (TGT-3).
An output is returned as a numpy view of the VM's tensor, so a later run that
reuses its memory changes it (TGT-3).

Configurations (``PIPELINES``): ``default`` (``relax.build``'s own default
pipeline, which plans memory with ``StaticPlanBlockMemory``); ``memory_plan=off``
(the same passes without it); ``inplace`` (``DataflowUseInplaceCalls`` first, then
the default passes); these three are one level: planning storage and computing
an elementwise op into an input's buffer change where results live, not how they
are computed, so they owe each other every bit. ``fused.inplace`` adds operator
fusion (``FuseOps``/``FuseTIR``, as TVM's CPU pipeline does) and is its own level:
a fused kernel is another LLVM function, which may contract a multiply and an add
into one rounding, so only the per-op bounds are owed across levels.

Executables are cached per (model, configuration) in the process (the shrinker
and bug folders build one graph many times); TVM's thread pool is kept to one
thread (``TVM_NUM_THREADS``), so that a run does not depend on the machine.
"""

from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from refcompiler.graph import Graph
from refcompiler.targets.base import Configuration, Refused, first_missing
from refcompiler.values import Values

__all__ = ["TARGET", "TvmRelaxTarget", "PIPELINES", "pipeline_passes"]

# Pass names under ``tvm.relax``; the same names go to a bug folder's tvm_config.json.
_DISPATCH = ("backend.DispatchSampling", "backend.DispatchSortScan")
_INPLACE = ("transform.DataflowUseInplaceCalls",)
_LEGALIZE = ("transform.LegalizeOps",)
_FUSE = ("transform.AnnotateTIROpPattern", "transform.FoldConstant", "transform.FuseOps", "transform.FuseTIR")
_LOWER = ("transform.RewriteDataflowReshape", "transform.ToNonDataflow", "transform.RemovePurityChecking", "transform.CallTIRRewrite")
_PLAN = ("transform.StaticPlanBlockMemory",)
_FINAL = (
    "transform.RewriteCUDAGraph", "transform.LowerAllocTensor", "transform.KillAfterLastUse", "transform.LowerRuntimeBuiltin",
    "transform.ComputePrimValue", "transform.VMShapeLower", "transform.AttachGlobalSymbol",
)  # fmt: skip


def pipeline_passes(inplace: bool, fuse: bool, plan: bool) -> tuple[str, ...]:
    """The pass names of a pipeline; ``(False, False, True)`` is what
    ``relax.get_pipeline("default")`` runs (tvm 0.27)."""
    return _DISPATCH + (_INPLACE if inplace else ()) + _LEGALIZE + (_FUSE if fuse else ()) + _LOWER + (_PLAN if plan else ()) + _FINAL


PIPELINES: dict[str, str | tuple[str, ...]] = {
    "default": "default",  # relax.build's own default, by name
    "memory_plan=off": pipeline_passes(inplace=False, fuse=False, plan=False),
    "inplace": pipeline_passes(inplace=True, fuse=False, plan=True),
    "fused.inplace": pipeline_passes(inplace=True, fuse=True, plan=True),
}
_LEVELS = {"default": "unfused", "memory_plan=off": "unfused", "inplace": "unfused", "fused.inplace": "fused"}
_CONFIGS = tuple(Configuration(key, _LEVELS[key], (("pipeline", p),)) for key, p in PIPELINES.items())


@dataclass(frozen=True)
class Program:
    """The exported model: its bytes, output name -> storage, the input names, and
    what the frontend raised on it, if it did (each configuration then reports it)."""

    model: bytes
    exits: tuple[tuple[str, str], ...]
    inputs: tuple[str, ...]
    frontend_error: str | None = None


def _tvm() -> Any:
    os.environ.setdefault("TVM_NUM_THREADS", "1")
    import tvm
    from tvm import relax  # noqa: F401
    from tvm.relax.frontend import onnx  # noqa: F401

    return tvm


def relax_pipeline(spec: str | tuple[str, ...]) -> Any:
    """What ``relax.build`` takes as ``relax_pipeline`` for a ``PIPELINES`` value."""
    tvm = _tvm()
    if isinstance(spec, str):
        return spec
    return tvm.transform.Sequential([functools.reduce(getattr, name.split("."), tvm.relax)() for name in spec])


@functools.lru_cache(maxsize=16)
def _imported(model: bytes) -> Any:
    import onnx
    from tvm.relax.frontend.onnx import from_onnx

    with warnings.catch_warnings():  # "Renaming name a.b to a_b", once per name: the frontend's own, not a finding
        warnings.simplefilter("ignore", UserWarning)
        return from_onnx(onnx.load_from_string(model))


@functools.lru_cache(maxsize=64)
def _executable(model: bytes, key: str) -> Any:
    tvm = _tvm()
    return tvm.relax.build(_imported(model), "llvm", relax_pipeline=relax_pipeline(PIPELINES[key]))


def aligned_copy(a: np.ndarray, alignment: int = 64) -> np.ndarray:
    """A copy of ``a`` whose data starts at a multiple of ``alignment`` bytes."""
    raw = np.empty(a.nbytes + alignment, np.uint8)
    start = (-raw.ctypes.data) % alignment
    out = raw[start : start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


class TvmSession:
    def __init__(self, program: Program, config: Configuration):
        if program.frontend_error is not None:
            raise RuntimeError(program.frontend_error)
        tvm = _tvm()
        self.tvm, self.program = tvm, program
        self.vm = tvm.relax.VirtualMachine(_executable(program.model, config.key), tvm.cpu())

    def run(self, values: Values) -> Mapping[str, np.ndarray]:
        tvm = self.tvm
        fed = [(values[name], aligned_copy(values[name])) for name in self.program.inputs]
        out = self.vm["main"](*[tvm.runtime.from_dlpack(a) for _, a in fed])
        for caller, own in fed:  # what the target wrote into its inputs, where the harness looks
            if caller.tobytes() != own.tobytes():
                caller[...] = own
        outs = [out] if isinstance(out, tvm.runtime.Tensor) else list(out)
        return {storage: np.from_dlpack(t) for (_, storage), t in zip(self.program.exits, outs, strict=True)}


class TvmRelaxTarget:
    name = "tvm"
    requirement = "python3 -m pip install -e '.[tvm]'  (apache-tvm>=0.27,<0.28 and onnx)"
    timeout = 180.0  # seconds per graph: every configuration compiles through LLVM

    def missing(self) -> str | None:
        return first_missing("onnx", "tvm")

    def configurations(self) -> tuple[Configuration, ...]:
        return _CONFIGS

    def build(self, graph: Graph) -> Program | Refused:
        from refcompiler.onnx_io.exporter import exit_names, export_graph

        try:
            model = export_graph(graph)
        except Exception as e:  # refc's exporter, not the target
            return Refused(f"refc's ONNX exporter cannot export the graph: {type(e).__name__}: {e}")
        if not model.graph.output:
            return Refused("the graph writes nothing (no save, no owned variable): an ONNX model needs an output")
        program = Program(model.SerializeToString(), tuple(exit_names(graph).items()), tuple(i.name for i in model.graph.input))
        return _import(program)

    def session(self, program: Program, config: Configuration) -> TvmSession:
        return TvmSession(program, config)

    def versions(self) -> dict[str, str]:
        import onnx

        return {"apache-tvm": _tvm().__version__, "onnx": onnx.__version__, "numpy": np.__version__}

    def bug_files(self, program: Program, failing: Configuration, passing: Configuration | None) -> dict[str, bytes]:
        """``model.onnx``, ``repro.py`` (``refcompiler.targets.repro_script``) and
        ``tvm_config.json`` (each configuration's ``relax_pipeline``: a name or pass names)."""
        from refcompiler.targets.repro_script import config_json, tvm_script

        def doc(c: Configuration | None) -> Any:
            return None if c is None else {"key": c.key, "relax_pipeline": c.option("pipeline")}

        files = {"model.onnx": program.model, "repro.py": tvm_script().encode()}
        return files | {"tvm_config.json": config_json(program.exits, program.inputs, doc(failing), doc(passing))}


def _import(program: Program) -> Program | Refused:
    """``program`` once the frontend has read it: refused for an op the frontend
    does not have; any other frontend error is kept, and reported by every configuration."""
    tvm = _tvm()
    try:
        _imported(program.model)
    except tvm.error.OpNotImplemented as e:
        return Refused(f"TVM's ONNX frontend: {str(e).splitlines()[0]}")
    except Exception as e:  # a valid model the frontend fails on: the target's failure
        return Program(program.model, program.exits, program.inputs, f"from_onnx raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    return program


TARGET = TvmRelaxTarget()
