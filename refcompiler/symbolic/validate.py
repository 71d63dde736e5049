"""Symbolic translation validation (DESIGN §7.4): a compiled program equals the
reference for all input values.

``validate_compiled(graph, compiled)`` gives every element of every
placeholder and owned variable a symbol, runs the allocated program through
the symbolic IR interpreter and the graph through the symbolic reference on
the same symbols (``runs`` times, carrying state), and compares the final
placeholders and owned state after every run. Hash-consing proves most
elements equal by construction; the rest, with the conditions under which
the concrete kernels run (embedding ids in range), go to Z3:

- ``PROVED``: equal for all input values, for this schedule and pipeline,
  with kernels trusted as uninterpreted functions (``SCOPE``);
- ``COUNTEREXAMPLE``: a Z3 model, made concrete input values, on which the
  concrete interpreter and the reference differ (``confirm``);
- ``INCONCLUSIVE``: Z3 said unknown (a timeout), or its model's difference
  did not survive concretisation, or no input value lets the reference run
  (its conditions never hold: "no difference where it runs" holds vacuously).
  Never reported as proved.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from refcompiler.driver import Compiled, run_compiled
from refcompiler.graph import Graph, StorageKind, initial_value
from refcompiler.proofs import Verdict, smt
from refcompiler.symbolic.confirm import PALETTES, concretise, confirm
from refcompiler.symbolic.defaults import DEFAULT_MAX_TERMS, DEFAULT_TIMEOUT
from refcompiler.symbolic.encode import INT32_MAX, INT32_MIN, Encoder
from refcompiler.symbolic.interpreter import SymbolicMachine, sort_of
from refcompiler.symbolic.kernels import Context
from refcompiler.symbolic.reference import symbolic_run_once
from refcompiler.symbolic.steps import Layout, load_words
from refcompiler.symbolic.terms import Sort, Terms
from refcompiler.values import Values

__all__ = ["SCOPE", "Validation", "SymbolicReference", "symbolic_reference", "validate_compiled", "small_enough", "DEFAULT_TIMEOUT", "MAX_NODES", "MAX_ELEMENTS"]

SCOPE = "for all input values, for this schedule and pipeline, with kernels trusted as uninterpreted functions"
CONCRETISATIONS = 3  # seeds tried on a model, with distinct normal values and with each of ``PALETTES``, before calling a difference unconfirmed
MAX_NODES = 40  # small_enough: what a campaign validates by default
MAX_ELEMENTS = 1024


@dataclass(frozen=True)
class Validation:
    """``differences``: the elements that are not equal by construction
    (``"run 1: p[3]"``); ``inputs``: the confirmed counterexample's values;
    ``unknown``: inconclusive because Z3 gave no answer in time, which another
    try (less load, more time) may give: not a function of the program alone."""

    verdict: Verdict
    detail: str
    runs: int
    schedule: tuple[str, ...]
    differences: tuple[str, ...] = ()
    inputs: Values | None = None
    used_z3: bool = False
    terms: int = 0
    seconds: float = 0.0
    unknown: bool = False


def small_enough(graph: Graph) -> bool:
    """Whether a campaign should validate ``graph`` by default: few nodes and
    few storage elements, so that validation stays in the throughput goal."""
    elements = sum(math.prod(s.shape) for s in graph.storage)  # ``s.size`` (numpy's prod) costs a hundred times more
    return len(graph.nodes) <= MAX_NODES and elements <= MAX_ELEMENTS


def scheduled_graph(compiled: Compiled) -> Graph:
    """The graph ``compiled`` was scheduled from (the one place that names the field)."""
    return compiled.scheduled_graph


@dataclass
class SymbolicReference:
    """The reference's side of a validation, shared by every program of one graph:
    the term table, the input symbols, the constants, the values after each run
    and the conditions under which the reference runs (embedding ids in range)."""

    graph: Graph
    terms: Terms
    symbols: dict[str, np.ndarray]
    constants: dict[str, np.ndarray]
    float_constants: dict[int, float]
    runs: list[dict[str, np.ndarray]]
    guards: set[int]
    _expected: dict[int, tuple] = field(default_factory=dict, repr=False, compare=False)
    _runs_at_all: smt.SatResult | None = field(default=None, repr=False, compare=False)
    _starts: dict[int, tuple] = field(default_factory=dict, repr=False, compare=False)

    def runs_at_all(self, deadline: float) -> smt.SatResult:
        """Whether some input value lets the reference run (its guards hold):
        asked of Z3 once per graph, and only of one with guards."""
        if not self.guards:
            return smt.SatResult.SAT
        if self._runs_at_all is None or self._runs_at_all is smt.SatResult.UNKNOWN:
            self._runs_at_all = smt.check(_conditions(self)[0], deadline=deadline)
        return self._runs_at_all

    def starting_words(self, layout: Layout) -> np.ndarray:
        """The module words, in ``layout`` order, of a machine of that layout
        after ``load(constants)`` and ``load(symbols)``: poison where neither
        names the buffer. Kept per layout, read-only (``SymbolicMachine.load_words``)."""
        found = self._starts.get(id(layout))
        if found is None or found[0] is not layout:
            words = np.empty(layout.size, dtype=np.int64)
            words.fill(self.terms.poison_f)
            load_words(words, layout, self.constants)
            load_words(words, layout, self.symbols)
            words.flags.writeable = False
            found = self._starts[id(layout)] = (layout, words)  # the layout kept: its id is not reused
        return found[1]

    def expected_words(self, layout: Layout) -> tuple[bytes, ...] | None:
        """Per run, the bytes ``SymbolicMachine.output_bytes`` has when the
        program's values are the reference's, each word of its buffer's sort (so
        ``read_back`` casts nothing and gives them); ``None`` when no bytes tell
        that (a name in one and not the other, a size or sort that differs).
        Kept per layout (one per graph's programs)."""
        found = self._expected.get(id(layout))
        if found is None or found[0] is not layout:
            found = self._expected[id(layout)] = (layout, self._expected_words(layout))  # the layout kept: its id is not reused
        return found[1]

    def _expected_words(self, layout: Layout) -> tuple[bytes, ...] | None:
        names = [name for name, *_ in layout.outputs]
        out = []
        for run in self.runs:
            if set(run) != set(names) or any(np.size(run[name]) != hi - lo for name, lo, hi, _ in layout.outputs):
                return None
            words = np.concatenate([np.asarray(run[name], dtype=np.int64).reshape(-1) for name in names]) if names else np.zeros(0, dtype=np.int64)
            if self.terms.sort_codes(words).tobytes() != layout.output_codes:
                return None
            out.append(words.tobytes())
        return tuple(out)


def symbolic_reference(graph: Graph, *, runs: int = 2, max_terms: int = DEFAULT_MAX_TERMS) -> SymbolicReference:
    """Run the reference of the valid ``graph`` ``runs`` times on symbols; the
    validation that uses it may build at most ``max_terms`` terms (``UsageError``)."""
    terms = Terms(limit=max_terms)
    symbols = _symbols(terms, graph)
    constants, float_constants = _constants(terms, graph)
    ctx = Context(terms)
    values, out, attrs_of = dict(symbols), [], {}
    for _ in range(runs):
        values = symbolic_run_once(ctx, graph, values, constants, attrs_of)
        out.append(values)
    return SymbolicReference(graph, terms, symbols, constants, float_constants, out, set(ctx.guards))


def validate_compiled(
    graph: Graph,
    compiled: Compiled,
    *,
    runs: int = 2,
    timeout: float = DEFAULT_TIMEOUT,
    reference: SymbolicReference | None = None,
    max_terms: int = DEFAULT_MAX_TERMS,
) -> Validation:
    """Validate ``compiled`` (from ``compile_graph(graph, ...)``) against the
    reference of ``graph`` after 1..``runs`` runs; see the module docstring.
    ``reference``: ``symbolic_reference(graph, runs=runs)``, computed once for many programs."""
    start = time.monotonic()
    ref = reference if reference is not None else symbolic_reference(graph, runs=runs, max_terms=max_terms)
    if ref.graph is not graph or len(ref.runs) != runs:
        raise ValueError("the symbolic reference is of another graph or number of runs")
    terms, prog_ctx = ref.terms, Context(ref.terms)
    diffs = _program_differences(prog_ctx, compiled, ref)
    extra_guards = sorted({g for g in prog_ctx.guards if g not in ref.guards and g != terms.true})
    base = dict(runs=runs, schedule=compiled.schedule, differences=tuple(d[0] for d in diffs), terms=len(terms.nodes))
    if not diffs and not extra_guards:
        return Validation(Verdict.PROVED, f"equal by construction, {SCOPE}", seconds=time.monotonic() - start, **base)
    solver, encoder = _conditions(ref)
    some = [encoder.expr(p) != encoder.expr(r) for _, p, r in diffs] + [smt.negation(encoder.expr(g)) for g in extra_guards]
    solver.add(smt.any_of(*some))
    answer = smt.check(solver, deadline=start + timeout)
    base.update(used_z3=True)
    if answer is smt.SatResult.UNSAT:
        runs_at_all = ref.runs_at_all(start + timeout)  # no difference where the reference never runs proves nothing
        if runs_at_all is smt.SatResult.UNSAT:
            return _done(Verdict.INCONCLUSIVE, "no input value lets the reference run (an embedding id is out of range whatever "
                                               "the inputs): there is nothing to compare, not proved", start, base)
        if runs_at_all is smt.SatResult.UNKNOWN:
            return _done(Verdict.INCONCLUSIVE, f"Z3 could not tell within {timeout:g} s whether any input value lets the "
                                               "reference run: not proved", start, base, unknown=True)
        return _done(Verdict.PROVED, f"proved by Z3, {SCOPE}", start, base)
    if answer is smt.SatResult.UNKNOWN:
        return _done(Verdict.INCONCLUSIVE, f"Z3 gave no answer within {timeout:g} s (unknown): not proved", start, base, unknown=True)
    return _counterexample(graph, compiled, solver, encoder, ref.symbols, ref.float_constants, start, base)


def _conditions(ref: SymbolicReference) -> tuple[Any, Encoder]:
    """A solver holding the conditions under which the reference runs (its
    guards) and the int32 range of every int input, and its encoder."""
    terms = ref.terms
    solver, encoder = smt.general_solver(), Encoder(terms)
    for g in sorted(ref.guards):
        solver.add(encoder.expr(g))
    for t in (int(x) for a in ref.symbols.values() for x in a.reshape(-1)):
        if terms.sort(t) is Sort.I:
            solver.add(encoder.expr(t) >= INT32_MIN, encoder.expr(t) <= INT32_MAX)
    return solver, encoder


def _done(verdict: Verdict, detail: str, start: float, base: dict[str, Any], **more: Any) -> Validation:
    return Validation(verdict, detail, **{**base, "seconds": time.monotonic() - start, **more})


def _counterexample(
    graph: Graph,
    compiled: Compiled,
    solver: Any,
    encoder: Encoder,
    symbols: dict[str, np.ndarray],
    fconsts: dict[int, float],
    start: float,
    base: dict[str, Any],
) -> Validation:
    """Turn the model into concrete inputs and confirm them by concrete execution."""

    @functools.cache  # the model does not change between the concretisations tried
    def model_value(t: int) -> int | str:
        return smt.model_value(solver, encoder.expr(t))

    def run_program(inputs: Values, runs: int) -> Values:
        return run_compiled(compiled, inputs, runs=runs)

    tries = [(seed, None) for seed in range(CONCRETISATIONS)]
    tries += [(seed, palette) for palette in PALETTES for seed in range(CONCRETISATIONS)]
    for seed, palette in tries:
        inputs = concretise(graph, symbols, fconsts, model_value, seed=seed, palette=palette)
        how = confirm(graph, run_program, inputs, base["runs"])
        if how is not None:
            first = base["differences"][0] if base["differences"] else "an embedding id out of range"
            detail = f"counterexample confirmed by concrete execution: {how} (symbolically first at {first})"
            return _done(Verdict.COUNTEREXAMPLE, detail, start, base, inputs=inputs)
    detail = "Z3 found values where the terms differ, but the concrete run agrees with the reference on them: not proved"
    return _done(Verdict.INCONCLUSIVE, detail, start, base)


def _symbols(terms: Terms, graph: Graph) -> dict[str, np.ndarray]:
    out = {}
    for s in graph.storage:
        if s.kind is not StorageKind.CONSTANT:
            sort = sort_of(s.dtype)
            size = math.prod(s.shape)  # ``s.size``, without numpy's prod (shapes are bounded: no int64 overflow)
            out[s.name] = np.array([terms.sym(f"{s.name}[{i}]", sort) for i in range(size)], dtype=np.int64).reshape(s.shape)
    return out


def _constants(terms: Terms, graph: Graph) -> tuple[dict[str, np.ndarray], dict[int, float]]:
    """The terms of each constant storage, and each float constant term's value
    (for concretisation)."""
    out: dict[str, np.ndarray] = {}
    floats: dict[int, float] = {}
    for s in graph.storage_of_kind(StorageKind.CONSTANT):
        value = initial_value(s).reshape(-1)
        if sort_of(s.dtype) is Sort.I:
            ids = [terms.iconst(int(v)) for v in value]
        else:
            ids = [terms.fconst(float(v)) for v in value]
            floats.update(zip(ids, (float(v) for v in value), strict=True))
        out[s.name] = np.array(ids, dtype=np.int64).reshape(s.shape)
    return out, floats


def _program_differences(ctx: Context, compiled: Compiled, ref: SymbolicReference) -> list[tuple[str, int, int]]:
    """Run the program ``len(ref.runs)`` times from the reference's symbols and
    constants; ``_differences`` from the reference after each run. A run whose
    words are the reference's (``expected_words``: one bytes comparison) has none."""
    machine = SymbolicMachine(compiled.program, ctx)
    machine.load_words(ref.starting_words(machine.layout))  # ``load`` of the constants, then the symbols
    expected, out = ref.expected_words(machine.layout), []
    for r, want in enumerate(ref.runs, start=1):
        machine.run()
        if expected is not None and machine.output_bytes() == expected[r - 1]:
            continue
        out.extend(_differences(r, want, {**ref.symbols, **machine.read_back()}))
    return out


def _differences(r: int, ref: dict[str, np.ndarray], prog: dict[str, np.ndarray]) -> list[tuple[str, int, int]]:
    """``(where, program term, reference term)`` for each element of run ``r`` not equal by construction."""
    out = []
    for name, want in ref.items():
        have, want = prog[name].reshape(-1), want.reshape(-1)
        if have.dtype == want.dtype and have.tobytes() == want.tobytes():  # equal ids, equal terms
            continue
        for i in np.flatnonzero(have != want):
            out.append((f"run {r}: {name}[{i}]", int(have[i]), int(want[i])))
    return out
