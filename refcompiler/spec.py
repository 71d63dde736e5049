"""The op table as the compiler sees it: ``specs.op_spec`` behind a swap point.

Compiler code that needs an op's in-place lists asks ``spec_of`` so that a
mutant (``inplace-stencil``) can present a wrong table entry without touching
``specs``.
"""

from __future__ import annotations

from typing import Iterable

from specs import OPS, OpKind, OpSpec

from refcompiler.variants import swappable

__all__ = ["spec_of", "specs_of"]


@swappable
def spec_of(kind: OpKind) -> OpSpec:
    return OPS[kind]  # ``specs.op_spec``, without its call (every ``Node.spec`` comes here)


def specs_of(nodes: Iterable[object]) -> list[OpSpec]:
    """``spec_of(node.op)`` for each of ``nodes`` (anything with an ``op``),
    asked once per op kind: for a walk over a graph, under the swaps installed
    when it is called (do not keep the list past them)."""
    seen: dict[OpKind, OpSpec] = {}
    out = []
    for node in nodes:
        op = node.op  # type: ignore[attr-defined]
        spec = seen.get(op)
        if spec is None:
            spec = seen[op] = spec_of(op)
        out.append(spec)
    return out
