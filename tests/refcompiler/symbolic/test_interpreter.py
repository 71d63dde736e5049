"""The symbolic IR interpreter keeps the concrete one's memory model: in place
stays exact, an aliasing bug shows up as poison or as a different term."""

from __future__ import annotations

import numpy as np

from refcompiler.ir_text import parse_program
from refcompiler.symbolic.interpreter import SymbolicMachine, chunks
from refcompiler.symbolic.kernels import Context
from refcompiler.interpreter import CHUNKS, _chunks, execute
from refcompiler.mutants import activate
from refcompiler.symbolic.terms import Sort, Terms

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


def test_chunks_are_the_concrete_interpreters():
    assert all(chunks(n) == _chunks(n) for n in range(0, 3 * CHUNKS + 2))


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
