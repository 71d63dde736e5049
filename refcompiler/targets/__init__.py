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

from refcompiler.errors import ExecutionError, RefCompilerError, UsageError
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
    """The target ``spec`` names; ``UsageError`` (exit 2) for an unknown name, one
    that does not keep the protocol (``refcompiler.targets.base.Target``: its
    attributes, ``missing()`` and ``configurations()``, called as a user's code
    and checked), or naming the pip command when the target's package is missing."""
    if spec not in BUILTIN and ":" not in spec:
        raise UsageError(f"target {shown(spec, 200)}: not a built-in target ({', '.join(sorted(BUILTIN))}) nor module:attribute")
    target = load_attribute(BUILTIN.get(spec, spec), "target")
    for attr in ("name", "configurations", "build", "session"):
        try:
            getattr(target, attr)
        except AttributeError:
            raise UsageError(f"target {shown(spec, 200)}: has no {attr!r} (see refcompiler.targets.base)") from None
        except Exception as e:  # a property of the user's that raises
            raise UsageError(f"target {shown(spec, 200)}: reading its {attr!r} raised {type(e).__name__}: {shown(str(e), 200)}") from None
    missing = _protocol_call(spec, "missing()", target.missing) if hasattr(target, "missing") else None
    if missing is not None and not isinstance(missing, str):
        raise UsageError(f"target {shown(spec, 200)}: missing() returned {shown(missing)}; it returns None or the name of the package it lacks")
    if missing is not None:
        raise UsageError(f"target {shown(spec, 200)} needs the package {missing!r}: {getattr(target, 'requirement', 'pip install ' + missing)}")
    _check_configurations(spec, _protocol_call(spec, "configurations()", target.configurations))
    return target


def _protocol_call(spec: str, what: str, fn: Any) -> object:
    """``fn()``, a method of target ``spec`` that ``resolve_target`` checks: what it
    raises, or its ``sys.exit``, makes the target unusable (``UsageError``)."""
    try:
        return target_call(spec, what, fn)
    except ExecutionError as e:
        raise UsageError(str(e)) from None


def _check_configurations(spec: str, found: object) -> None:
    """``configurations()`` keeps the protocol: a tuple or list of at least one
    object with a string ``key``, the keys distinct."""
    if not isinstance(found, (tuple, list)):
        raise UsageError(f"target {shown(spec, 200)}: configurations() returned {shown(found)}; it returns a tuple of "
                         "refcompiler.targets.base.Configuration")
    if not found:
        raise UsageError(f"target {shown(spec, 200)}: configurations() returned none; a target has at least one to compare with the reference")
    keys = [getattr(c, "key", None) for c in found]
    bad = next((c for c, k in zip(found, keys) if not isinstance(k, str)), None)
    if bad is not None:
        raise UsageError(f"target {shown(spec, 200)}: configurations() returned {shown(bad)}, which has no string key; "
                         "each is a refcompiler.targets.base.Configuration")
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise UsageError(f"target {shown(spec, 200)}: configurations() returned the key {shown(repeated[0])} more than once")


def target_call(spec: str, what: str, fn: Any, *args: object) -> object:
    """``fn(*args)``, target ``spec``'s own code (``what``: "build()"), called as
    a user's code is: what it raises, or a ``sys.exit``, is an ``ExecutionError``
    naming the target and ``what``."""
    return call_untrusted(fn, f"target {shown(spec, 200)}'s {what}", *args)


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
