"""The execution plan (checks made once per program) and its cache.

Each test breaks one property the interpreter relies on: a plan served for
another program or under other swap points, a violation raised at the wrong
place relative to the data work, poison left out where a kernel reads it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from specs import OpKind, OpSpec

from refcompiler import execution_plan, kernel_facts, variants
from refcompiler.errors import ExecutionError, InvariantViolation
from refcompiler.execution_plan import plan_of
from refcompiler.execution_steps import KernelStep
from refcompiler.interpreter import execute
from refcompiler.ir_text import parse_program
from refcompiler.spec import spec_of
from refcompiler.values import same_bits
from refcompiler.variants import installed

from tests.refcompiler.test_interpreter import ROLL_IN_PLACE  # a roll over its own input: wrong chunk by chunk in place

X = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
HEADER = """\
program "plan"
buffer X : placeholder float32[4] init {"value": [1.0, 2.0, 3.0, 4.0]}
buffer out : placeholder float32[4]
buffer ids : placeholder int32[2] init {"value": [0, 1]}
buffer grad : placeholder float32[2, 2] init {"value": [1.0, 1.0, 1.0, 1.0]}
buffer table : owned float32[3, 2] owner emb
save s : out <- r
peak_bytes 64
"""


def program(body: str):  # type: ignore[no-untyped-def]
    return parse_program(HEADER + body)


def roll_in_place() -> object:
    def patched(k: OpKind) -> OpSpec:
        spec = spec_of.original(k)  # type: ignore[attr-defined]
        return replace(spec, inplace=(("x",),)) if k is OpKind.ROLL else spec

    return installed({spec_of: patched})


def test_a_plan_made_without_a_swap_is_not_served_under_it() -> None:
    p = program(ROLL_IN_PLACE)
    assert np.isnan(execute(p, {})["out"]).all()  # roll not in place: its output is poisoned first
    with roll_in_place():  # type: ignore[attr-defined]
        inside = execute(p, {})["out"]
    assert not np.isnan(inside).any() and inside[0] == np.roll(-X, 1)[0]  # in place: wrong chunk by chunk
    assert np.isnan(execute(p, {})["out"]).all()  # and the correct table again after the block


def test_a_plan_is_cached_per_program_object_and_swap_table() -> None:
    p = program(ROLL_IN_PLACE)
    assert plan_of(p) is plan_of(p)
    moved = replace(p, offsets=(("%a", 16),))
    assert plan_of(moved) is not plan_of(p)
    assert [s.targets[0][0].lo for s in plan_of(moved).steps if isinstance(s, KernelStep)] == [16, 16]
    equal = program(ROLL_IN_PLACE)
    assert equal == p and plan_of(equal) is not plan_of(p)  # by identity: nothing is shared by equality
    before = plan_of(p)
    with roll_in_place():  # type: ignore[attr-defined]
        inside = plan_of(p)
        assert inside is not before and inside is plan_of(p)
        assert _kernels(inside)[1].poison == ()  # in place under the swap: nothing poisoned
    assert len(_kernels(plan_of(p))[1].poison) == 1


def _kernels(plan):  # type: ignore[no-untyped-def]
    return [s for s in plan.steps if isinstance(s, KernelStep)]


def test_alloc_and_dealloc_poison_the_arena_bytes_their_activation_owns() -> None:
    from refcompiler.interpreter import POISON, _Machine

    p = program("0: alloc %a : float32[4] at 0\n1: kernel a = neg(@out %a, @in X)\n2: copy s(@out out, @in %a)\n3: dealloc %a\n")
    machine = _Machine(p)
    machine.load({})
    machine.run()
    assert same_bits(machine.read_back()["out"], -X)
    assert (machine.arena[:16] == POISON).all()  # the dealloc poisoned what the kernel had written
    assert [(s.lo, s.hi) for s in plan_of(p).steps if type(s).__name__ == "PoisonStep"] == [(0, 16), (0, 16)]


def test_the_cache_is_bounded() -> None:
    programs = [program(ROLL_IN_PLACE) for _ in range(execution_plan.CACHE_SIZE + 5)]
    for p in programs:
        plan_of(p)
    assert len(execution_plan._CACHE) == execution_plan.CACHE_SIZE
    assert id(programs[0]) not in execution_plan._CACHE or execution_plan._CACHE[id(programs[0])][0] is not programs[0]


def test_a_hit_evicted_by_another_thread_meanwhile_is_still_served(monkeypatch) -> None:
    """Threads share the cache (a Dask worker's, or a caller's): a hit found by
    one thread while another evicts it was moved to the end after it was gone
    (KeyError) before the cache was locked. The eviction is made to fall
    between the lookup and the move: the finder waits for it (at most 0.5 s,
    which the lock makes it wait out)."""
    import threading
    from collections import OrderedDict

    inside, evicted = threading.Event(), threading.Event()
    finder: list[threading.Thread] = []

    class Racing(OrderedDict):  # type: ignore[type-arg]
        def get(self, key, default=None):  # type: ignore[no-untyped-def]
            found = super().get(key, default)
            if finder and threading.current_thread() is finder[0] and found is not None:
                inside.set()
                evicted.wait(0.5)
            return found

    monkeypatch.setattr(execution_plan, "_CACHE", Racing())
    monkeypatch.setattr(execution_plan, "CACHE_SIZE", 1)
    p, q = program(ROLL_IN_PLACE), program(ROLL_IN_PLACE)
    made = plan_of(p)
    got: list[object] = []

    def find() -> None:
        try:
            got.append(plan_of(p))
        except BaseException as e:  # noqa: BLE001  # the thread's error, checked below
            got.append(e)

    def evict() -> None:
        inside.wait(5)
        plan_of(q)  # CACHE_SIZE 1: p's entry goes
        evicted.set()

    finder.append(threading.Thread(target=find))
    other = threading.Thread(target=evict)
    finder[0].start()
    other.start()
    finder[0].join()
    other.join()
    assert got == [made]


def test_only_outputs_over_what_the_kernel_reads_are_poisoned() -> None:
    p = program(
        "0: alloc %a : float32[4] at 0\n1: kernel a = neg(@out %a, @in X)\n2: alloc %b : float32[4] at 16\n"
        "3: kernel r = roll(@out %b, @in %a)\n4: copy s(@out out, @in %b)\n5: dealloc %a\n6: dealloc %b\n"
    )
    kernels = [s for s in plan_of(p).steps if isinstance(s, KernelStep)]
    assert [k.poison for k in kernels] == [(), ()] and [k.targets[0][1] for k in kernels] == [False, False]
    assert same_bits(execute(p, {})["out"], np.roll(-X, 1))


USE_AFTER_FREE = """\
0: alloc %emb : float32[2, 2] at 0
1: kernel emb = embedding_update(@out %emb, @in ids, @in grad, @inout table)
2: dealloc %emb
3: alloc %r : float32[2, 2] at 16
4: kernel r = neg(@out %r, @in %emb)
5: dealloc %r
"""


def test_a_data_error_before_the_violation_is_raised_first() -> None:
    p = program(USE_AFTER_FREE)
    with pytest.raises(InvariantViolation, match="used after its dealloc"):
        execute(p, {})
    with pytest.raises(ExecutionError, match="node 'emb'"):  # the embedding runs before the bad read
        execute(p, {"ids": np.array([0, 7], np.int32)})


def test_a_violation_before_a_data_error_is_raised_first_and_fresh_each_time() -> None:
    # the embedding's result is used before its alloc: found before the kernel would run
    p = program(
        "0: kernel emb = embedding_update(@out %emb, @in ids, @in grad, @inout table)\n"
        "1: alloc %emb : float32[2, 2] at 0\n2: dealloc %emb\n"
    )
    caught = []
    for _ in range(2):
        with pytest.raises(InvariantViolation) as e:
            execute(p, {"ids": np.array([0, 7], np.int32)})
        caught.append(e.value)
    assert caught[0] is not caught[1] and str(caught[0]) == str(caught[1])
    assert caught[0].invariant == "IR-1" and caught[0].instruction == 0
    assert plan_of(p).steps == ()


def test_a_violation_at_the_end_comes_after_every_step() -> None:
    p = program("0: alloc %a : float32[4] at 0\n1: kernel a = neg(@out %a, @in X)\n2: copy s(@out out, @in %a)\n")
    plan = plan_of(p)
    assert [type(s).__name__ for s in plan.steps] == ["PoisonStep", "KernelStep", "CopyStep"]
    assert isinstance(plan.failure, InvariantViolation)
    with pytest.raises(InvariantViolation, match="never deallocated"):
        execute(p, {})


def test_what_planning_takes_from_the_spec_is_kept_per_swap_table_and_bounded(monkeypatch) -> None:
    p = program(ROLL_IN_PLACE)
    kernel_facts._FACTS.clear()
    kernel_facts._BY_INSTR.clear()
    assert len(_kernels(execution_plan._Planner(p).plan())[1].poison) == 1
    with roll_in_place():  # type: ignore[attr-defined]
        assert _kernels(execution_plan._Planner(p).plan())[1].poison == ()  # not the facts kept without the swap
    assert len(_kernels(execution_plan._Planner(p).plan())[1].poison) == 1
    monkeypatch.setattr(kernel_facts, "FACTS_KEPT", 1)
    kernel_facts._FACTS.clear()
    kernel_facts._BY_INSTR.clear()
    execution_plan._Planner(p).plan()  # two kernels of two ops: the second's facts replace the first's
    assert len(kernel_facts._FACTS) == 1 and len(kernel_facts._BY_INSTR) == 1


def test_facts_kept_for_an_instruction_object_are_served_for_it_only() -> None:
    p = program(ROLL_IN_PLACE)
    neg, roll = (i for i in p.instrs if i.op is not None)
    swaps = variants.active()
    kernel_facts._BY_INSTR.clear()
    want = kernel_facts.kernel_facts(roll, swaps)
    assert kernel_facts._BY_INSTR[id(roll)][2] is want
    kernel_facts._BY_INSTR[id(neg)] = (roll, swaps, want)  # as if another instruction had had neg's id
    assert kernel_facts.kernel_facts(neg, swaps) != want and kernel_facts._BY_INSTR[id(neg)][0] is neg
    with roll_in_place():  # type: ignore[attr-defined]
        assert kernel_facts.kernel_facts(roll, variants.active())[3] == ((0,),)  # not the facts kept without the swap
    assert kernel_facts.kernel_facts(roll, swaps)[3] == ((),)


def test_a_name_used_again_is_checked_again_where_it_is_used_again() -> None:
    # %a is resolved at 1 (its location is kept), then used after its dealloc at 3
    bad = program(
        "0: alloc %a : float32[4] at 0\n1: kernel a = neg(@out %a, @in X)\n2: dealloc %a\n"
        "3: copy s(@out out, @in %a)\n"
    )
    with pytest.raises(InvariantViolation) as e:
        execute(bad, {})
    assert e.value.invariant == "IR-1" and e.value.instruction == 3 and "after its dealloc at instruction 2" in str(e.value)
    view = program(
        "0: alloc %a : float32[4] at 0\n1: view %v : float32[2, 2] (@in %a)\n2: kernel a = neg(@out %a, @in X)\n"
        "3: kernel b = neg(@out %v, @in %v)\n4: dealloc %a\n5: copy s(@out out, @in %v)\n"
    )
    with pytest.raises(InvariantViolation) as e:
        execute(view, {})
    assert e.value.invariant == "IR-1" and e.value.instruction == 5 and "(through %v)" in str(e.value)


def test_the_kernels_of_a_run_ignore_floating_point_errors_whatever_the_caller_set() -> None:
    p = program("0: alloc %a : float32[4] at 0\n1: kernel a = exp(@out %a, @in X)\n2: copy s(@out out, @in %a)\n3: dealloc %a\n")
    with np.errstate(all="raise"):
        got = execute(p, {"X": np.array([1e30, 0.0, -1e30, 1.0], np.float32)})["out"]
        assert np.isinf(got[0]) and got[2] == 0.0
        with pytest.raises(FloatingPointError):  # the caller's setting holds outside the run
            np.exp(np.float32(1e30))


def test_a_kernel_with_a_wrong_signature_fails_every_plan() -> None:
    bad = program("0: alloc %a : float32[4] at 0\n1: kernel a = neg(@in X, @out %a)\n2: copy s(@out out, @in %a)\n3: dealloc %a\n")
    for _ in range(2):  # the second from what the first kept
        failure = execution_plan._Planner(bad).plan().failure
        assert isinstance(failure, InvariantViolation) and failure.invariant == "IR-1" and "in that order" in failure.detail


def test_initial_bytes_are_kept_per_buffers_tuple_and_never_shared_by_equality() -> None:
    from refcompiler import interpreter

    def zero_program(value: str):  # type: ignore[no-untyped-def]
        return parse_program(
            f'program "z"\nbuffer Z : placeholder float32[1] init {{"value": [{value}]}}\nbuffer out : placeholder float32[1]\n'
            "save s : out <- r\npeak_bytes 0\n0: copy s(@out out, @in Z)\n"
        )

    plus, minus = zero_program("0.0"), zero_program("-0.0")
    assert plus.buffers == minus.buffers  # 0.0 == -0.0: equal, yet their bits differ
    for _ in range(2):  # the second from what the first kept
        assert not np.signbit(execute(plus, {})["out"][0]) and np.signbit(execute(minus, {})["out"][0])
    moved = replace(plus, peak_bytes=16)  # another program over the same buffers tuple
    assert interpreter._layout_of(moved.buffers) is interpreter._layout_of(plus.buffers)
    assert not np.signbit(execute(moved, {})["out"][0])
