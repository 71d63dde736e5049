"""The IR interpreter's execution contract and its sanitizer (DESIGN §5).

Each test runs a hand-written program built to break one rule and checks
WHICH mechanism notices: the sanitizer (by invariant id) or the differential
(a result that is not what the kernel gives on the program's inputs).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from specs import OpKind, OpSpec

from refcompiler.driver import compile_graph, run_compiled
from refcompiler.errors import ExecutionError, InvariantViolation, LimitExceeded, UsageError
from refcompiler.graph_json import load_graph
from refcompiler import interpreter
from refcompiler.execution_steps import chunk_bounds
from refcompiler.interpreter import CHUNKS, execute, execute_runs
from refcompiler.ir_text import parse_program
from refcompiler.ir_verifier import check_mem1
from refcompiler.reference import run_reference
from refcompiler.spec import spec_of
from refcompiler.values import same_bits
from refcompiler.variants import installed

ROOT = Path(__file__).resolve().parents[2]

X = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
M = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)
HEADER = """\
program "contract"
buffer X : placeholder float32[4] init {"value": [1.0, 2.0, 3.0, 4.0]}
buffer Y : placeholder float32[4] init {"value": [10.0, 20.0, 30.0, 40.0]}
buffer M : placeholder float32[2, 3] init {"value": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]}
buffer K : constant float32[4] init {"value": [0.5, 0.5, 0.5, 0.5]}
buffer out : placeholder float32[4]
buffer out2 : placeholder float32[4]
buffer outm : placeholder float32[3, 2]
buffer acc : owned float32[4] owner running
"""


def run(body: str, saves: str = "", *, peak: int = 64, runs: int = 1) -> dict[str, np.ndarray]:
    program = parse_program(HEADER + saves + f"peak_bytes {peak}\n" + body)
    return execute(program, {}, runs=runs)


def caught(body: str, saves: str = "", **kw: object) -> InvariantViolation:
    with pytest.raises(InvariantViolation) as e:
        run(body, saves, **kw)  # type: ignore[arg-type]
    return e.value


def declare_inplace(kind: OpKind, *lists: tuple[str, ...]):  # type: ignore[no-untyped-def]
    """A spec table in which ``kind``'s results may overwrite the given inputs."""

    def patched(k: OpKind) -> OpSpec:
        spec = spec_of.original(k)  # type: ignore[attr-defined]
        return replace(spec, inplace=tuple(lists)) if k is kind else spec

    return installed({spec_of: patched})


# -- a correct program, and the differential as a check ----------------------------


def test_runs_a_correct_program() -> None:
    got = run(
        """\
0: alloc %a : float32[4] at 0
1: kernel a = add(@out %a, @in X, @in K)
2: alloc %r : float32[4] at 16
3: kernel r = roll(@out %r, @in %a)
4: dealloc %a
5: copy s(@out out, @in %r)
6: dealloc %r
""",
        "save s : out <- r\n",
    )
    assert same_bits(got["out"], np.roll(X + np.float32(0.5), 1))
    assert same_bits(got["X"], X)  # not saved: unchanged
    assert set(got) == {"X", "Y", "M", "out", "out2", "outm", "acc"}


def test_an_elementwise_op_in_place_stays_exact() -> None:
    got = run(
        """\
0: alloc %a : float32[4] at 0
1: kernel a = neg(@out %a, @in X)
2: kernel r = exp(@out %a, @in %a)
3: copy s(@out out, @in %a)
4: dealloc %a
""",
        "save s : out <- r\n",
    )
    assert same_bits(got["out"], np.exp(-X))


# -- results committed in chunks from memory as it is ----------------------------------

ROLL_IN_PLACE = """\
0: alloc %a : float32[4] at 0
1: kernel a = neg(@out %a, @in X)
2: kernel r = roll(@out %a, @in %a)
3: copy s(@out out, @in %a)
4: dealloc %a
"""


def test_a_stencil_over_its_own_input_is_poisoned_first() -> None:
    # roll may overwrite nothing: its output is poisoned before it runs
    got = run(ROLL_IN_PLACE, "save s : out <- r\n")
    assert not same_bits(got["out"], np.roll(-X, 1))
    assert np.isnan(got["out"]).all()


def test_a_stencil_declared_in_place_goes_wrong_chunk_by_chunk() -> None:
    # even where the table says roll may run in place (the inplace-stencil bug),
    # committing in chunks makes later chunks read what earlier ones wrote
    with declare_inplace(OpKind.ROLL, ("x",)):
        got = run(ROLL_IN_PLACE, "save s : out <- r\n")
    want = np.roll(-X, 1)
    assert got["out"][0] == want[0]  # the first chunk is right
    assert not same_bits(got["out"], want)  # the differential sees the rest
    assert not np.isnan(got["out"]).any()


def test_a_transpose_declared_in_place_goes_wrong() -> None:
    body = """\
0: alloc %m : float32[2, 3] at 0
1: kernel m = neg(@out %m, @in M)
2: view %mt : float32[3, 2] (@in %m)
3: kernel t = transpose(@out %mt, @in %m)
4: copy s(@out outm, @in %mt)
5: dealloc %m
"""
    with declare_inplace(OpKind.TRANSPOSE, ("x",)):
        got = run(body, "save s : outm <- t\n")
    assert not same_bits(got["outm"], (-M).T.copy())
    # with its own buffer the same transpose is exact
    good = body.replace("2: view %mt : float32[3, 2] (@in %m)", "2: alloc %mt : float32[3, 2] at 32").replace(
        "5: dealloc %m", "5: dealloc %m\n6: dealloc %mt"
    )
    assert same_bits(run(good, "save s : outm <- t\n")["outm"], (-M).T.copy())


ADD_SUB = """\
0: alloc %a : float32[4] at 0
1: kernel a = identity(@out %a, @in X)
2: alloc %d : float32[4] at 16
3: kernel pair = add_sub(@out {s}, @out {d}, @in %a, @in Y)
4: copy s1(@out out, @in {s})
5: copy s2(@out out2, @in {d})
6: dealloc %a
7: dealloc %d
"""
ADD_SUB_SAVES = "save s1 : out <- pair\nsave s2 : out2 <- pair\n"


def test_add_sub_second_result_over_an_input_is_exact() -> None:
    # d may overwrite a: s has been produced by then
    got = run(ADD_SUB.format(s="%d", d="%a"), ADD_SUB_SAVES)
    assert same_bits(got["out"], X + np.float32(10) * np.arange(1, 5, dtype=np.float32))
    assert same_bits(got["out2"], X - np.float32(10) * np.arange(1, 5, dtype=np.float32))


def test_add_sub_first_result_over_an_input_breaks_the_second() -> None:
    y = np.float32(10) * np.arange(1, 5, dtype=np.float32)
    body = ADD_SUB.format(s="%a", d="%d")
    # s may overwrite nothing: poisoned first, both results are wrong
    got = run(body, ADD_SUB_SAVES)
    assert not same_bits(got["out"], X + y) and not same_bits(got["out2"], X - y)
    # declared in place anyway: s is right, but d then reads s where a was
    with declare_inplace(OpKind.ADD_SUB, ("a", "b"), ("a", "b")):
        got = run(body, ADD_SUB_SAVES)
    assert same_bits(got["out"], X + y)
    assert not same_bits(got["out2"], X - y)
    assert same_bits(got["out2"], (X + y) - y)


def test_sgd_momentum_in_place_pairs() -> None:
    body = """\
0: alloc %w : float32[4] at 0
1: kernel w = identity(@out %w, @in X)
2: alloc %v : float32[4] at 16
3: kernel v = identity(@out %v, @in Y)
4: kernel step = sgd_momentum(@out {w_new}, @out {v_new}, @in %w, @in K, @in %v) {{"lr": 0.5, "mu": 0.5}}
5: copy s1(@out out, @in {w_new})
6: copy s2(@out out2, @in {v_new})
7: dealloc %w
8: dealloc %v
"""
    saves = "save s1 : out <- step\nsave s2 : out2 <- step\n"
    v_new = np.float32(0.5) * (np.float32(10) * np.arange(1, 5, dtype=np.float32)) + np.float32(0.5)
    w_new = X - np.float32(0.5) * v_new
    got = run(body.format(w_new="%w", v_new="%v"), saves)  # each result over the input it may overwrite
    assert same_bits(got["out"], w_new) and same_bits(got["out2"], v_new)
    got = run(body.format(w_new="%v", v_new="%w"), saves)  # w_new over v, which v_new still reads
    assert not same_bits(got["out"], w_new) and not same_bits(got["out2"], v_new)


def test_two_live_buffers_that_overlap_corrupt_a_result() -> None:
    body = """\
0: alloc %a : float32[4] at 0
1: alloc %b : float32[4] at 0
2: kernel a = neg(@out %a, @in X)
3: kernel b = exp(@out %b, @in X)
4: alloc %c : float32[4] at 16
5: kernel c = add(@out %c, @in %a, @in %b)
6: copy s(@out out, @in %c)
7: dealloc %a
8: dealloc %b
9: dealloc %c
"""
    got = run(body, "save s : out <- c\n")  # the sanitizer sees initialised bytes: no complaint
    assert not same_bits(got["out"], -X + np.exp(X))  # the differential sees the corruption
    assert same_bits(got["out"], np.exp(X) + np.exp(X))
    with pytest.raises(InvariantViolation) as e:  # and MEM-1, statically
        check_mem1(parse_program(HEADER + "peak_bytes 64\n" + body))
    assert e.value.invariant == "MEM-1"


# -- the sanitizer ----------------------------------------------------------------


def test_dealloc_before_the_last_use_is_ir1() -> None:
    v = caught(
        """\
0: alloc %a : float32[4] at 0
1: kernel a = neg(@out %a, @in X)
2: dealloc %a
3: alloc %b : float32[4] at 16
4: kernel b = exp(@out %b, @in %a)
5: dealloc %b
"""
    )
    assert v.invariant == "IR-1"
    assert "instruction 4" in str(v) and "after its dealloc at instruction 2" in str(v)
    assert "> 4: kernel" in v.context  # the IR around the fault, the faulty line marked


def test_use_through_a_view_after_dealloc_is_ir1() -> None:
    v = caught(
        """\
0: alloc %a : float32[4] at 0
1: kernel a = neg(@out %a, @in X)
2: view %v : float32[2, 2] (@in %a)
3: dealloc %a
4: copy s(@out out, @in %v)
""",
        "save s : out <- a\n",
    )
    assert v.invariant == "IR-1" and "%a (through %v)" in str(v)


def test_reading_memory_freed_by_an_overlapping_buffer_is_ir1() -> None:
    # %b takes %a's bytes while %a is allocated; when %b goes, they are dead
    v = caught(
        """\
0: alloc %a : float32[4] at 0
1: kernel a = neg(@out %a, @in X)
2: alloc %b : float32[4] at 0
3: kernel b = neg(@out %b, @in X)
4: dealloc %b
5: copy s(@out out, @in %a)
6: dealloc %a
""",
        "save s : out <- a\n",
    )
    assert v.invariant == "IR-1" and "dead" in str(v)


@pytest.mark.parametrize(
    "body,needle",
    [
        ("0: kernel a = neg(@out %nothing, @in X)\n", "names no module buffer"),
        ("0: copy s(@out out, @in %v)\n1: view %v : float32[4] (@in X)\n", "before its view instruction"),
        ("0: alloc %a : float32[4] at 0\n1: alloc %a : float32[4] at 0\n", "allocated again"),
        ("0: alloc %a : float32[4] at 0\n1: dealloc %a\n2: dealloc %a\n", "already deallocated"),
        ("0: alloc %a : float32[4] at 0\n1: kernel a = neg(@out %a, @in X)\n", "never deallocated"),
        ("0: kernel a = add(@out out, @in X)\n", "add takes 1 @out, 2 @in, 0 @inout"),
        ("0: copy s(@in X, @out out)\n", "a copy takes @out destination"),
        ("0: view %v : float32[3] (@in X)\n", "does not cover"),
    ],
)
def test_malformed_programs_are_ir1(body: str, needle: str) -> None:
    v = caught(body, "save s : out\n")
    assert v.invariant == "IR-1" and needle in str(v)


def test_reading_uninitialised_memory_is_ir2() -> None:
    v = caught(
        """\
0: alloc %a : float32[4] at 0
1: alloc %b : float32[4] at 16
2: kernel b = neg(@out %b, @in %a)
3: dealloc %a
4: dealloc %b
"""
    )
    assert v.invariant == "IR-2" and "byte 0 of the arena (byte 0 of %a)" in str(v)


@pytest.mark.parametrize(
    "body",
    [
        "0: kernel a = neg(@out K, @in X)\n",
        "0: copy s(@out K, @in X)\n",
        "0: view %k : float32[2, 2] (@in K)\n1: kernel a = neg(@out %k, @in M)\n",
    ],
)
def test_writing_a_constant_is_ir3(body: str) -> None:
    assert caught(body, "save s : K <- a\n").invariant == "IR-3"


@pytest.mark.parametrize(
    "body,needle",
    [
        ("0: alloc %a : float32[4] at 0\n1: kernel a = neg(@out %a, @in acc)\n2: dealloc %a\n", "by the kernel a; only its owner's kernel running may"),
        ("0: copy running(@out out, @in acc)\n", "by the copy running; only its owner's kernel running may"),
        ("0: view %v : float32[2, 2] (@in acc)\n", "only its owner's kernel running may"),
        # the owner itself, but reading its state as an input
        ("0: alloc %a : float32[4] at 0\n1: kernel running = accumulate(@out %a, @in acc, @inout X)\n2: dealloc %a\n", "only @inout"),
    ],
)
def test_owned_state_outside_its_owner_is_ir5(body: str, needle: str) -> None:
    v = caught(body, "save running : out <- running\n")
    assert v.invariant == "IR-5" and needle in str(v)


def test_an_owner_reaches_its_state_as_inout() -> None:
    ok = "0: alloc %a : float32[4] at 0\n1: kernel running = accumulate(@out %a, @in X, @inout acc)\n2: dealloc %a\n"
    assert same_bits(run(ok, runs=2)["acc"], X + X)


@pytest.mark.parametrize(
    "body,saves,needle",
    [
        ("0: kernel a = neg(@out out, @in X)\n", "save s : out <- b\n", "only by copy s or kernel b"),
        ("0: kernel a = neg(@out out, @in X)\n", "", "not saved"),
        ("0: copy s(@out out, @in X)\n1: copy s(@out out, @in Y)\n", "save s : out\n", "written again"),
        ("0: copy s(@out X, @in Y)\n1: copy t(@out out, @in X)\n", "save s : X\nsave t : out\n", "read after its save"),
    ],
)
def test_placeholder_writes_follow_their_save_ir4(body: str, saves: str, needle: str) -> None:
    v = caught(body, saves)
    assert v.invariant == "IR-4" and needle in str(v)


def test_the_producer_may_write_its_saved_placeholder_and_be_read_there() -> None:
    # after copy elimination the producer writes the placeholder, and readers of
    # the saved value read it there
    got = run(
        """\
0: kernel a = neg(@out out, @in X)
1: alloc %b : float32[4] at 0
2: kernel b = exp(@out %b, @in out)
3: copy t(@out out2, @in %b)
4: dealloc %b
""",
        "save s : out <- a\nsave t : out2 <- b\n",
    )
    assert same_bits(got["out"], -X) and same_bits(got["out2"], np.exp(-X))


# -- runs, values, errors ------------------------------------------------------------


def test_state_persists_across_runs_and_placeholders_are_rebound() -> None:
    body = """\
0: alloc %a : float32[4] at 0
1: kernel running = accumulate(@out %a, @in X, @inout acc)
2: copy s(@out X, @in %a)
3: dealloc %a
"""
    saves = "save s : X <- running\n"
    once, twice = run(body, saves), run(body, saves, runs=2)
    assert same_bits(once["acc"], X) and same_bits(once["X"], X)
    # second run: acc = X + X (X is now the first run's total)
    assert same_bits(twice["acc"], X + X) and same_bits(twice["X"], X + X)


def test_execute_runs_gives_the_values_after_each_run() -> None:
    body = """\
0: alloc %a : float32[4] at 0
1: kernel running = accumulate(@out %a, @in X, @inout acc)
2: copy s(@out X, @in %a)
3: dealloc %a
"""
    program = parse_program(HEADER + "save s : X <- running\n" + "peak_bytes 64\n" + body)
    each = execute_runs(program, {}, runs=3)
    for k, got in enumerate(each, 1):
        want = execute(program, {}, runs=k)
        assert set(got) == set(want) and all(same_bits(got[n], want[n]) for n in want)
    assert not same_bits(each[0]["acc"], each[1]["acc"])  # the runs differ: the test can tell them apart


def _kernel_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = interpreter.prepared

    def counting(op, attrs):  # type: ignore[no-untyped-def]
        kernel = real(op, attrs)

        def counted(ins, state):  # type: ignore[no-untyped-def]
            calls.append(op.value)
            return kernel(ins, state)

        return counted

    monkeypatch.setattr(interpreter, "prepared", counting)
    return calls


def test_a_kernel_over_other_bytes_is_computed_once_per_instruction(monkeypatch: pytest.MonkeyPatch) -> None:
    # its result overlaps nothing it reads: every chunk would get the same value
    calls = _kernel_calls(monkeypatch)
    got = run("0: alloc %r : float32[4] at 0\n1: kernel r = roll(@out %r, @in X) {\"shift\": 1}\n2: copy s(@out out, @in %r)\n3: dealloc %r\n", "save s : out <- r\n")
    assert same_bits(got["out"], np.roll(X, 1)) and calls == ["roll"]


def test_a_kernel_over_its_own_input_is_computed_again_for_every_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _kernel_calls(monkeypatch)
    with declare_inplace(OpKind.ROLL, ("x",)):
        got = run(ROLL_IN_PLACE, "save s : out <- r\n")
    assert calls.count("roll") == CHUNKS and not same_bits(got["out"], np.roll(-X, 1))


def test_values_override_initial_values() -> None:
    program = parse_program(HEADER + "save s : out\npeak_bytes 0\n0: copy s(@out out, @in X)\n")
    got = execute(program, {"X": -X})
    assert same_bits(got["out"], -X)
    with pytest.raises(UsageError, match="buffer is float32"):
        execute(program, {"X": np.zeros(3, np.float32)})
    with pytest.raises(UsageError, match="name no placeholder or owned"):
        execute(program, {"K": X})
    with pytest.raises(UsageError, match="not allocated"):
        execute(replace(program, peak_bytes=None), {})


@pytest.mark.parametrize("peak", [-8, 2.5, True, "64"])
def test_an_arena_size_that_is_not_a_whole_number_of_bytes_is_a_usage_error(peak: object) -> None:
    program = parse_program(HEADER + "save s : out\npeak_bytes 0\n0: copy s(@out out, @in X)\n")
    with pytest.raises(UsageError, match="peak_bytes is .*, not a whole number of bytes"):
        execute(replace(program, peak_bytes=peak), {})


def test_an_arena_above_the_bytes_limit_is_refused_before_any_memory_is_taken(monkeypatch) -> None:
    monkeypatch.setenv("REFC_MAX_BYTES", "1024")
    program = parse_program(HEADER + "save s : out\npeak_bytes 2048\n0: copy s(@out out, @in X)\n")
    with pytest.raises(LimitExceeded, match="program 'contract' arena: needs 2048 bytes .*REFC_MAX_BYTES"):
        execute(program, {})
    assert same_bits(execute(replace(program, peak_bytes=1024), {})["out"], X)


def test_an_offset_outside_the_arena_is_mem1() -> None:
    v = caught("0: alloc %a : float32[4] at 60\n1: dealloc %a\n")
    assert v.invariant == "MEM-1"


def test_an_embedding_id_out_of_range_names_node_and_id() -> None:
    graph = load_graph(ROOT / "examples" / "embedding_update.json")
    ids = np.array([0, 1, 9, 2, 3], np.int32)
    with pytest.raises(ExecutionError) as e:
        run_compiled(compile_graph(graph), {"ids": ids})
    assert "node 'emb'" in str(e.value) and "9" in str(e.value) and e.value.node == "emb"
    with pytest.raises(ExecutionError):
        run_reference(graph, {"ids": ids})


def test_chunks_cover_the_range_in_order() -> None:
    assert chunk_bounds(1) == ((0, 1),)
    for size in range(2, 40):
        chunks = chunk_bounds(size)
        assert 2 <= len(chunks) <= CHUNKS
        assert chunks[0][0] == 0 and chunks[-1][1] == size
        assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(chunks, chunks[1:]))


def test_a_large_program_runs_exactly_and_leaves_no_poison_of_its_size_behind() -> None:
    # the poison bytes every machine shares are kept only up to POISON_FILL_KEPT
    from refcompiler.graph_json import graph_from_doc

    rows = interpreter.POISON_FILL_KEPT // (4 * 256) + 8  # two activations of more than the kept size each
    doc = {"format": "refc-graph/1", "name": "large",
           "storage": [{"name": "A", "kind": "placeholder", "dtype": "float32", "shape": [rows, 256], "init": {"seed": 1}},
                       {"name": "out", "kind": "placeholder", "dtype": "float32", "shape": [rows, 256]}],
           "nodes": [{"name": "n", "op": "neg", "inputs": ["A"]}, {"name": "r", "op": "relu", "inputs": ["n"]},
                     {"name": "s", "op": "save", "inputs": ["r"], "attrs": {"target": "out"}}]}
    graph = graph_from_doc(doc)
    compiled = compile_graph(graph, pipeline="O0")
    assert compiled.program.peak_bytes > interpreter.POISON_FILL_KEPT
    got = run_compiled(compiled)
    assert same_bits(got["out"], run_reference(graph)["out"])
    assert len(interpreter._POISON_FILL) <= interpreter.POISON_FILL_KEPT
