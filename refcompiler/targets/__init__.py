"""Real compilers as targets of refc's oracles (issue 14, DESIGN §8, "External targets").

- ``base``: the protocol (``Configuration``, ``Refused``, ``Outcome``) and the
  harness ``execute_all`` that runs a target's configurations, carrying state;
- ``bounds``: what a target owes the reference per op (bit for bit or ULPs);
- ``verdict``: ``judge`` an outcome: crashes, errors, changed arrays,
  configurations against each other, against the reference;
- ``isolate``: the same harness in a child process, so that a crash or hang is a
  result;
- ``bugs``: a bug folder a target's maintainers can run without refc;
- one module per built-in target: ``onnxruntime``, ``torch_inductor``, ``tvm_relax``;
  ``repro_script``: the bug folders' scripts.

A target is named by its built-in name or as ``module:attribute``.
"""

from __future__ import annotations

from typing import Any

from refcompiler.errors import RefCompilerError, UsageError
from refcompiler.limits import shown
from refcompiler.plugins import call_untrusted, load_attribute

__all__ = ["BUILTIN", "resolve_target", "target_call", "target_versions"]

BUILTIN = {
    "onnxruntime": "refcompiler.targets.onnxruntime:TARGET",
    "onnxruntime-pairs": "refcompiler.targets.onnxruntime:PAIRS",
    "torch-inductor": "refcompiler.targets.torch_inductor:TARGET",
    "tvm": "refcompiler.targets.tvm_relax:TARGET",
}


def resolve_target(spec: str) -> Any:
    """The target ``spec`` names; ``UsageError`` (exit 2) for an unknown name, or
    naming the pip command when the target's package is missing."""
    if spec not in BUILTIN and ":" not in spec:
        raise UsageError(f"target {shown(spec)}: not a built-in target ({', '.join(sorted(BUILTIN))}) nor module:attribute")
    target = load_attribute(BUILTIN.get(spec, spec), "target")
    for attr in ("name", "configurations", "build", "session"):
        if not hasattr(target, attr):
            raise UsageError(f"target {spec!r}: has no {attr!r} (see refcompiler.targets.base)")
    missing = target.missing() if hasattr(target, "missing") else None
    if missing is not None:
        raise UsageError(f"target {spec!r} needs the package {missing!r}: {getattr(target, 'requirement', 'pip install ' + missing)}")
    return target


def target_call(spec: str, what: str, fn: Any, *args: object) -> object:
    """``fn(*args)``, target ``spec``'s own code (``what``: "build()"), called as
    a user's code is: what it raises, or a ``sys.exit``, is an ``ExecutionError``
    naming the target and ``what``."""
    return call_untrusted(fn, f"target {shown(spec)}'s {what}", *args)


def target_versions(spec: str) -> dict[str, str]:
    """What target ``spec`` says it runs on (its ``versions()``: package ->
    version, as strings), called as a user's code is: empty when it raises,
    exits or returns no mapping (a case or bug folder then lacks them)."""

    def pairs() -> dict[str, str]:
        return {str(k): str(v) for k, v in resolve_target(spec).versions().items()}

    try:
        return target_call(spec, "versions()", pairs)  # type: ignore[return-value]
    except RefCompilerError:
        return {}
