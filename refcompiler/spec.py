"""The op table as the compiler sees it: ``specs.op_spec`` behind a swap point.

Compiler code that needs an op's in-place lists asks ``spec_of`` so that a
mutant (``inplace-stencil``) can present a wrong table entry without touching
``specs``.
"""

from __future__ import annotations

from specs import OpKind, OpSpec, op_spec

from refcompiler.variants import swappable

__all__ = ["spec_of"]


@swappable
def spec_of(kind: OpKind) -> OpSpec:
    return op_spec(kind)
