"""The symbolic IR interpreter keeps the concrete one's memory model: in place
stays exact, an aliasing bug shows up as poison or as a different term."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from refcompiler.driver import compile_graph
from refcompiler.errors import InvariantViolation, LimitExceeded, UsageError
from refcompiler.graph_json import load_graph
from refcompiler.interpreter import execute
from refcompiler.ir_text import parse_program
from refcompiler.mutants import activate
from refcompiler.spec import spec_of
from refcompiler.symbolic import interpreter as symbolic_interpreter
from refcompiler.symbolic.interpreter import SymbolicMachine, sort_of
from refcompiler.symbolic.kernels import Context
from refcompiler.symbolic.terms import Sort, Terms
from refcompiler.variants import installed

ROOT = Path(__file__).resolve().parents[3]
HEAD = """program "t"
peak_bytes 16
buffer p : placeholder float32[4] init {"seed": 0}
buffer q : placeholder float32[4] init {"seed": 1}
save s : q <- s
"""


def run(body: str) -> tuple[Terms, np.ndarray, np.ndarray]:
    program = parse_program(HEAD + body)
    t = Terms()
    p = np.array([t.sym(f"p{i}", Sort.F) for i in range(4)], dtype=np.int64)
    q = np.array([t.sym(f"q{i}", Sort.F) for i in range(4)], dtype=np.int64)
    m = SymbolicMachine(program, Context(t))
    m.load({"p": p, "q": q})
    m.run()
    return t, p, m.read_back()["q"]


def test_an_elementwise_op_in_place_stays_exact():
    t, p, q = run(
        "   0: alloc   %a : float32[4] at 0\n"
        "   1: kernel  a = neg(@out %a, @in p)\n"
        "   2: kernel  b = relu(@out %a, @in %a)\n"
        "   3: copy    s(@out q, @in %a)\n"
        "   4: dealloc %a\n"
    )
    assert [int(x) for x in q] == [t.app("relu", (t.app("neg", (e,)),)) for e in p]


def test_a_result_over_an_input_not_declared_in_place_is_poison():
    t, p, q = run(
        "   0: alloc   %a : float32[4] at 0\n"
        "   1: kernel  a = neg(@out %a, @in p)\n"
        "   2: kernel  r = roll(@out %a, @in %a)\n"
        "   3: copy    s(@out q, @in %a)\n"
        "   4: dealloc %a\n"
    )
    # roll may overwrite nothing: its @out is poisoned before it runs, and it reads that
    assert [int(x) for x in q] == [t.poison_f] * 4


def test_a_stencil_in_place_goes_wrong_chunk_by_chunk_as_the_concrete_one_does():
    """With roll declared in place (mutant inplace-stencil), each chunk recomputes
    roll from memory earlier chunks wrote: [x3, x3, x3, x2], concretely too."""
    body = (
        "   0: alloc   %a : float32[4] at 0\n"
        "   1: kernel  a = neg(@out %a, @in p)\n"
        "   2: kernel  r = roll(@out %a, @in %a)\n"
        "   3: copy    s(@out q, @in %a)\n"
        "   4: dealloc %a\n"
    )
    with activate("inplace-stencil"):
        t, p, q = run(body)
        x = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
        concrete = execute(parse_program(HEAD + body), {"p": x})["q"]
    n = [t.app("neg", (e,)) for e in p]
    assert [int(e) for e in q] == [n[3], n[3], n[3], n[2]]
    assert concrete.tolist() == [-4.0, -4.0, -4.0, -3.0]


def test_a_read_after_dealloc_sees_poison():
    t, p, q = run(
        "   0: alloc   %a : float32[4] at 0\n"
        "   1: kernel  a = neg(@out %a, @in p)\n"
        "   2: dealloc %a\n"
        "   3: copy    s(@out q, @in %a)\n"
    )
    assert [int(x) for x in q] == [t.poison_f] * 4


def test_a_kernel_whose_operands_do_not_fit_its_op_is_ir1_at_that_instruction():
    """The machine takes a kernel's operand counts from ``kernel_facts``, as the
    concrete plan does; a program the IR verifier would reject is not guessed at."""
    with pytest.raises(InvariantViolation) as e:
        run(
            "   0: alloc   %a : float32[4] at 0\n"
            "   1: kernel  a = neg(@out %a, @in p, @in q)\n"
            "   2: copy    s(@out q, @in %a)\n"
            "   3: dealloc %a\n"
        )
    assert e.value.invariant == "IR-1" and e.value.instruction == 1 and "neg" in str(e.value)


def test_views_alias_their_source():
    t, p, q = run(
        "   0: alloc   %a : float32[4] at 0\n"
        "   1: view    %v : float32[2, 2] (@in %a)\n"
        "   2: kernel  a = neg(@out %a, @in p)\n"
        "   3: view    %w : float32[4] (@in %v)\n"
        "   4: copy    s(@out q, @in %w)\n"
        "   5: dealloc %a\n"
    )
    assert [int(x) for x in q] == [t.app("neg", (e,)) for e in p]



# -- the step memo (``SymbolicMachine.compute``): found only where nothing it depends on changed

STENCIL = (
    "   0: alloc   %a : float32[4] at 0\n"
    "   1: kernel  a = neg(@out %a, @in p)\n"
    "   2: kernel  r = roll(@out %a, @in %a)\n"
    "   3: copy    s(@out q, @in %a)\n"
    "   4: dealloc %a\n"
)
ROLL_APART = (
    "   0: alloc   %a : float32[4] at 0\n"
    "   1: alloc   %b : float32[4] at 16\n"
    "   2: kernel  a = neg(@out %a, @in p)\n"
    "   3: kernel  r = roll(@out %b, @in %a)\n"
    "   4: copy    s(@out q, @in %b)\n"
    "   5: dealloc %a\n"
    "   6: dealloc %b\n"
)


def run_on(t: Terms, body: str, peak: int = 16) -> tuple[list[int], Context]:
    """Run ``body`` once on the shared table ``t``; ``q`` after it, and the context."""
    ctx = Context(t)
    m = SymbolicMachine(parse_program(HEAD.replace("peak_bytes 16", f"peak_bytes {peak}") + body), ctx)
    m.load({n: np.array([t.sym(f"{n}{i}", Sort.F) for i in range(4)], dtype=np.int64) for n in "pq"})
    m.run()
    return [int(e) for e in m.read_back()["q"]], ctx


def negs(t: Terms) -> list[int]:
    return [t.app("neg", (t.sym(f"p{i}", Sort.F),)) for i in range(4)]


def test_a_stencil_in_place_is_not_served_the_whole_tensor_result_found_before():
    """One term table sees roll out of place (one whole roll, remembered), then
    in place (mutant inplace-stencil): each later chunk reads words earlier
    chunks wrote, so it is another step, computed, not the roll found."""
    t = Terms()
    n = negs(t)
    assert run_on(t, ROLL_APART, peak=32)[0] == [n[3], n[0], n[1], n[2]]
    with activate("inplace-stencil"):
        assert run_on(t, STENCIL)[0] == [n[3], n[3], n[3], n[2]]


def test_a_steps_in_place_lists_are_asked_again_under_other_swap_points():
    """roll over its input under the correct spec (its @out poisoned), then under
    the mutant's (in place) on one table, then correct again."""
    t = Terms()
    n = negs(t)
    assert run_on(t, STENCIL)[0] == [t.poison_f] * 4
    with activate("inplace-stencil"):
        assert run_on(t, STENCIL)[0] == [n[3], n[3], n[3], n[2]]
    assert run_on(t, STENCIL)[0] == [t.poison_f] * 4


NEG = "   0: alloc   %a : float32[4] at 0\n   1: kernel  a = neg(@out %a, @in p)\n   2: copy    s(@out q, @in %a)\n   3: dealloc %a\n"


def test_a_step_found_is_not_computed_again_unless_the_swap_points_differ(monkeypatch: pytest.MonkeyPatch):
    calls: list[object] = []
    real = symbolic_interpreter.run_symbolic_kernel
    monkeypatch.setattr(symbolic_interpreter, "run_symbolic_kernel", lambda *a: calls.append(a[1]) or real(*a))
    t = Terms()
    first = run_on(t, NEG)[0]
    assert len(calls) == 1
    assert run_on(t, NEG)[0] == first and len(calls) == 1  # found: the same op on the same words
    with installed({spec_of: spec_of.original}):  # another swap table, however harmless
        assert run_on(t, NEG)[0] == first
    assert len(calls) == 2


def test_a_step_found_replays_its_guards_and_its_values_cannot_be_written():
    program = compile_graph(load_graph(ROOT / "examples" / "embedding_update.json")).program
    t = Terms()
    guards = []
    for _ in range(2):
        ctx = Context(t)
        m = SymbolicMachine(program, ctx)
        for b in program.buffers:
            m.load({b.name: np.array([t.sym(f"{b.name}{i}", sort_of(b.type.dtype)) for i in range(b.type.size)], dtype=np.int64)})
        m.run()
        guards.append(ctx.guards)
    assert guards[0] and guards[1] == guards[0]
    for values, _ in t.step_memo.values():
        assert all(not v.flags.writeable for v in values)


def test_a_dealloc_poisons_only_the_words_its_activation_still_owns():
    """%b is allocated over the upper half of %a (no verifier here): %a's
    dealloc poisons its lower half only, and %b's values survive it."""
    body = (
        "   0: alloc   %a : float32[4] at 0\n"
        "   1: kernel  a = neg(@out %a, @in p)\n"
        "   2: alloc   %b : float32[4] at 8\n"
        "   3: kernel  b = neg(@out %b, @in p)\n"
        "   4: dealloc %a\n"
        "   5: copy    s(@out q, @in %b)\n"
        "   6: dealloc %b\n"
    )
    program = parse_program(HEAD.replace("peak_bytes 16", "peak_bytes 24") + body)
    t = Terms()
    p = np.array([t.sym(f"p{i}", Sort.F) for i in range(4)], dtype=np.int64)
    m = SymbolicMachine(program, Context(t))
    m.load({"p": p, "q": p})
    for _ in range(2):  # the second run as the first: the plan is made once
        m.run()
        assert m.read_back()["q"].tolist() == negs(t)
        assert m.arena[:2].tolist() == [t.poison_f] * 2 and m.arena[2:6].tolist() == negs(t)


def test_read_back_casts_a_word_of_the_other_sort_and_only_that_one():
    """Every module word is checked at once; one int32 term in the float32 ``q``
    is read as its bits (the uninterpreted cast), the rest as they are."""
    program = parse_program(HEAD + "   0: copy    s(@out q, @in p)\n")
    t = Terms()
    p = np.array([t.sym(f"p{i}", Sort.F) for i in range(4)], dtype=np.int64)
    m = SymbolicMachine(program, Context(t))
    m.load({"p": p, "q": p})
    assert m.read_back()["q"].tolist() == p.tolist()
    n = t.sym("n", Sort.I)
    m.load({"q": np.array([p[0], n, p[2], t.poison_i], dtype=np.int64)})
    got = m.read_back()
    assert got["q"].tolist() == [p[0], t.app("bits_as_float32", (n,), Sort.F), p[2], t.poison_f]
    assert got["p"].tolist() == p.tolist()


@pytest.mark.parametrize("peak", [None, -16, 16.0, "16"])
def test_a_program_without_a_whole_arena_size_is_a_usage_error(peak: object) -> None:
    from dataclasses import replace

    program = replace(parse_program(HEAD + "   0: copy s(@out q, @in p)\n"), peak_bytes=peak)
    with pytest.raises(UsageError, match="not allocated" if peak is None else "not a whole number of bytes"):
        SymbolicMachine(program, Context(Terms()))


def test_an_arena_above_the_bytes_limit_is_refused_before_its_words_are_taken(monkeypatch) -> None:
    monkeypatch.setenv("REFC_MAX_BYTES", "1024")
    program = parse_program(HEAD.replace("peak_bytes 16", "peak_bytes 4096") + "   0: copy s(@out q, @in p)\n")
    with pytest.raises(LimitExceeded, match="program 't' arena: needs 4096 bytes"):
        SymbolicMachine(program, Context(Terms()))
