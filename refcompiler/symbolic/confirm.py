"""From a Z3 model to concrete input values, confirmed by concrete execution.

A model gives integers for int32 inputs (embedding ids: used as they are) and,
for float32 inputs, elements of an uninterpreted sort: inputs on the same
element get the same value, a float constant's element takes that constant's
value, and every other element a distinct finite float32 drawn from a seeded
generator (or, when those confirm nothing, one of a few special values:
signed zeros, infinities, NaN; ``PALETTES``). The concrete interpreter (under the sanitizer) then runs the
compiled program on those values, once and twice, against the reference: a
difference in bits, or a program that fails where the reference does not,
confirms the counterexample. The functions behind the kernels are not the
model's, so a difference the model shows may not survive concretisation:
that is not a counterexample (the validator says inconclusive).
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from refcompiler.errors import ExecutionError, InvariantViolation
from refcompiler.graph import Graph, StorageKind
from refcompiler.reference import run_reference
from refcompiler.values import Values, same_bits

__all__ = ["PALETTES", "concretise", "confirm"]

ModelValue = Callable[[int], "int | str"]


# The values tried for a model's float elements once distinct normal values did not
# confirm it (``concretise``'s ``palette``): a difference the model shows may hold only
# on signed zeros (max(+0, -0) is +0, max(-0, +0) is -0), infinities or NaN
PALETTES: tuple[tuple[float, ...], ...] = (
    (0.0, -0.0),
    (0.0, -0.0, 1.0, -1.0),
    (float("nan"), float("inf"), float("-inf"), 1.0),
    (0.0, -0.0, 1.0, -1.0, float("nan"), float("inf"), float("-inf")),
)


def concretise(
    graph: Graph, symbols: Mapping[str, np.ndarray], constants: Mapping[int, float], model_value: ModelValue, *, seed: int,
    palette: tuple[float, ...] | None = None,
) -> Values:
    """Concrete inputs from a model. ``symbols``: each non-constant storage's input
    terms; ``constants``: float constant terms and their values; ``model_value(t)``:
    the model's value of term ``t`` (an ``int``, or a string naming an element).
    ``palette``: each float element not a constant's takes one of these values
    (drawn with ``seed``; two elements may then share one) instead of a distinct
    normal one. Any values a difference is confirmed on are a counterexample."""
    rng = np.random.default_rng(seed)
    chosen: dict[str, np.float32] = {}
    for t, value in constants.items():
        chosen.setdefault(str(model_value(t)), np.float32(value))
    used = {float(v) for v in chosen.values()}
    out: Values = {}
    for s in graph.storage:
        if s.kind is StorageKind.CONSTANT:
            continue
        terms = symbols[s.name].reshape(-1)
        if s.dtype.value == "int32":
            out[s.name] = np.array([int(model_value(int(t))) for t in terms], dtype=np.int32).reshape(s.shape)
            continue
        values = []
        for t in terms:
            element = str(model_value(int(t)))
            if element not in chosen:
                chosen[element] = _fresh(rng, used) if palette is None else np.float32(palette[rng.integers(len(palette))])
            values.append(chosen[element])
        out[s.name] = np.array(values, dtype=np.float32).reshape(s.shape)
    return out


def _fresh(rng: np.random.Generator, used: set[float]) -> np.float32:
    while True:
        v = np.float32(rng.standard_normal())
        if float(v) not in used:
            used.add(float(v))
            return v


def confirm(graph: Graph, run_program: Callable[[Values, int], Values], inputs: Values, runs: int) -> str | None:
    """A one-line description of how the compiled program differs from the
    reference on ``inputs`` after 1..``runs`` runs, or ``None`` if it does not.
    ``run_program(inputs, runs)`` executes the compiled program concretely."""
    for r in range(1, runs + 1):
        try:
            expected = run_reference(graph, inputs, runs=r)
        except ExecutionError:
            return None  # outside the reference's domain: not a counterexample
        try:
            got = run_program(inputs, r)
        except (InvariantViolation, ExecutionError) as e:
            return f"run {r}: the compiled program fails: {e}"
        for name, want in expected.items():
            have = got.get(name, inputs.get(name))
            if have is None or not same_bits(have, want):
                return f"run {r}: {name} differs from the reference"
    return None
