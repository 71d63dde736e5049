"""The driver treats a user's scheduler or pass as untrusted code: what it gets
wrong is a finding about it (SCH-1, or an ExecutionError naming it), never a
crash of refc."""

from __future__ import annotations

from pathlib import Path

import pytest

from refcompiler.driver import compile_graph, prepare
from refcompiler.errors import ExecutionError, InvariantViolation, UsageError
from refcompiler.graph_json import load_graph
from refcompiler.ir_text import print_program

GRAPH_PATH = Path(__file__).resolve().parents[2] / "examples" / "read_then_save.json"
GRAPH = load_graph(GRAPH_PATH)


@pytest.mark.parametrize("result", [None, 3, "sum s late save_late", ["sum", 1]])
def test_a_scheduler_returning_no_list_of_names_breaks_sch1(result: object) -> None:
    with pytest.raises(InvariantViolation) as info:
        compile_graph(GRAPH, scheduler=lambda graph, deps, seed: result)
    assert info.value.invariant == "SCH-1"


def test_a_scheduler_that_raises_is_named() -> None:
    def broken(graph, deps, seed):  # type: ignore[no-untyped-def]
        raise ValueError("no idea")

    with pytest.raises(ExecutionError, match="scheduler .*broken raised ValueError: no idea"):
        compile_graph(GRAPH, scheduler=broken)


def test_a_pass_that_raises_is_named() -> None:
    def broken_pass(program):  # type: ignore[no-untyped-def]
        raise KeyError("x")

    with pytest.raises(ExecutionError, match=r"pass tests\.refcompiler\.test_driver\.test_a_pass_that_raises_is_named\.<locals>\.broken_pass raised KeyError"):
        compile_graph(GRAPH, pipeline=[broken_pass])


def test_compiling_with_the_graph_prepared_once_gives_the_same_program() -> None:
    prepared = prepare(GRAPH)
    for pipeline in ("O0", "O2"):
        for scheduler in ("topo", "memory", "random"):
            alone = compile_graph(GRAPH, scheduler=scheduler, seed=3, pipeline=pipeline)
            shared = compile_graph(GRAPH, scheduler=scheduler, seed=3, pipeline=pipeline, prepared=prepared)
            assert print_program(shared.program) == print_program(alone.program)
            assert shared.schedule == alone.schedule and shared.scheduled_graph == alone.scheduled_graph


def test_a_prepared_graph_still_checks_the_order() -> None:
    with pytest.raises(InvariantViolation) as info:
        compile_graph(GRAPH, schedule=["save_late", "late", "s", "sum"], prepared=prepare(GRAPH))
    assert info.value.invariant == "SCH-1"


def test_a_preparation_belongs_to_one_graph() -> None:
    with pytest.raises(UsageError, match="another graph"):
        compile_graph(GRAPH, prepared=prepare(load_graph(GRAPH_PATH.parent / "sgd_momentum.json")))


def test_a_users_scheduler_cannot_weaken_the_shared_dependency_model() -> None:
    prepared = prepare(GRAPH)

    def vandal(graph, deps, seed):  # type: ignore[no-untyped-def]
        deps.remove_edges_from(list(deps.edges))
        return [n.name for n in reversed(graph.nodes)]

    with pytest.raises(InvariantViolation) as info:
        compile_graph(GRAPH, scheduler=vandal, prepared=prepared)
    assert info.value.invariant == "SCH-1" and prepared.deps.number_of_edges() > 0


def test_one_order_under_several_pipelines_is_scheduled_and_lowered_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import refcompiler.driver as driver

    lowered: list[tuple[str, ...]] = []

    class Spy(driver.Lowering):
        def lower(self, schedule):  # type: ignore[no-untyped-def]
            lowered.append(tuple(schedule))
            return super().lower(schedule)

    monkeypatch.setattr(driver, "Lowering", Spy)
    prepared = prepare(GRAPH)
    o0 = compile_graph(GRAPH, scheduler="random", seed=5, pipeline="O0", prepared=prepared)
    o2 = compile_graph(GRAPH, scheduler="random", seed=5, pipeline="O2", prepared=prepared)
    assert o0.schedule == o2.schedule and lowered == [o0.schedule]
    other = compile_graph(GRAPH, scheduler="topo", pipeline="O0", prepared=prepared)
    assert len(lowered) == 1 + (other.schedule != o0.schedule)
    assert print_program(o2.program) == print_program(compile_graph(GRAPH, scheduler="random", seed=5, pipeline="O2").program)


def test_an_order_compiled_again_gives_the_program_it_gave(monkeypatch: pytest.MonkeyPatch) -> None:
    import refcompiler.driver as driver
    from refcompiler.mutants import activate

    runs: list[int] = []
    real = driver.run_pipeline
    monkeypatch.setattr(driver, "run_pipeline", lambda program, passes: runs.append(1) or real(program, passes))
    prepared = prepare(GRAPH)
    by_topo = compile_graph(GRAPH, scheduler="topo", pipeline="O2", prepared=prepared)
    given = compile_graph(GRAPH, schedule=by_topo.schedule, pipeline="O2", prepared=prepared)
    assert given.program is by_topo.program and len(runs) == 1  # the same order: compiled once
    with activate("share-any-input"):  # other swap points: compiled again, under them
        mutated = compile_graph(GRAPH, schedule=by_topo.schedule, pipeline="O2", prepared=prepared)
    assert mutated.program is not by_topo.program and len(runs) == 2
    compile_graph(GRAPH, schedule=by_topo.schedule, pipeline="O0", prepared=prepared)
    assert len(runs) == 3  # other passes: compiled again


def test_a_users_pass_runs_for_every_compilation() -> None:
    calls: list[int] = []

    def mine(program):  # a user's: it need not be deterministic, so its program is not remembered
        calls.append(1)
        return program

    prepared = prepare(GRAPH)
    for _ in range(2):
        compile_graph(GRAPH, scheduler="topo", pipeline=[mine], prepared=prepared)
    assert len(calls) == 2


def test_a_users_scheduler_is_called_for_every_compilation() -> None:
    calls: list[int] = []

    def mine(graph, deps, seed):  # a user's: it need not be deterministic, so it is not remembered
        calls.append(seed)
        legal = ["late", "sum", "s", "save_late"]
        return legal if len(calls) == 1 else legal[::-1]

    prepared = prepare(GRAPH)
    compile_graph(GRAPH, scheduler=mine, prepared=prepared)
    with pytest.raises(InvariantViolation):
        compile_graph(GRAPH, scheduler=mine, prepared=prepared)  # its second order is illegal, and checked
    assert len(calls) == 2


@pytest.mark.parametrize("path", [GRAPH_PATH, GRAPH_PATH.parents[1] / "tests" / "data" / "prove" / "save_cycle.json"])
def test_a_preparation_schedules_the_scheduled_graph(path: Path) -> None:
    from refcompiler.deps import dependency_graph
    from refcompiler.driver import scheduled_graph

    graph = load_graph(path)
    prepared = prepare(graph)
    assert prepared.scheduled == scheduled_graph(graph)
    assert set(prepared.deps.edges) == set(dependency_graph(prepared.scheduled).edges)


@pytest.mark.parametrize("path", [GRAPH_PATH, GRAPH_PATH.parents[1] / "tests" / "data" / "prove" / "save_cycle.json"])
def test_the_scheduled_model_is_the_scheduled_graph_and_its_dependency_graph(path: Path) -> None:
    from refcompiler.deps import dependency_graph
    from refcompiler.driver import scheduled_graph, scheduled_model

    graph = load_graph(path)
    scheduled, deps = scheduled_model(graph)
    assert scheduled == scheduled_graph(graph)
    want = dependency_graph(scheduled)
    assert list(deps.edges(data=True)) == list(want.edges(data=True)) and list(deps) == list(want)


def test_the_collector_is_paused_while_compiling_and_resumed_after() -> None:
    import gc

    seen: list[bool] = []

    def spy(program):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        return program

    assert gc.isenabled()
    compile_graph(GRAPH, pipeline=[spy])
    assert seen == [False] and gc.isenabled()
    with pytest.raises(ExecutionError):
        compile_graph(GRAPH, pipeline=[lambda program: 1 / 0])
    assert gc.isenabled()  # resumed when the compilation fails too


def test_what_is_kept_for_one_swap_table_is_not_served_under_another() -> None:
    from refcompiler.mutants import activate

    def outcome(**kwargs: object) -> str:
        try:
            return print_program(compile_graph(graph, pipeline="O0", **kwargs).program)  # type: ignore[arg-type]
        except InvariantViolation as e:
            return f"{e.invariant}: {e}"

    graph = load_graph(GRAPH_PATH.parent / "embedding_update.json")
    prepared = prepare(graph)
    plain = outcome(prepared=prepared)
    with activate("lower-state-no-writeback"):  # changes lowering (and takes fresh names)
        mutated, alone = outcome(prepared=prepared), outcome()
    assert mutated == alone != plain and alone.startswith("IR-5")
    assert outcome(prepared=prepared) == plain


SAVE_CYCLE = GRAPH_PATH.parents[1] / "tests" / "data" / "prove" / "save_cycle.json"


@pytest.mark.parametrize("path", [GRAPH_PATH, SAVE_CYCLE])
def test_asking_the_scheduler_then_compiling_its_order_is_compile_graph(path: Path) -> None:
    from refcompiler.driver import compile_order, scheduler_order

    graph = load_graph(path)
    prepared = prepare(graph)
    assert len(prepared.scheduled.nodes) > len(graph.nodes) or path == GRAPH_PATH  # the cycle's copy is the scheduler's to place
    for scheduler in ("topo", "memory", "random"):
        order = scheduler_order(prepared, scheduler, 3)
        for pipeline in ("O0", "O2"):
            whole = compile_graph(graph, scheduler=scheduler, seed=3, pipeline=pipeline)
            split = compile_order(prepared, order, pipeline=pipeline)
            assert split.schedule == whole.schedule == order
            assert print_program(split.program) == print_program(whole.program)


def test_compiling_a_schedulers_order_checks_it_and_its_names() -> None:
    from refcompiler.driver import compile_order, scheduler_order

    prepared = prepare(GRAPH)
    with pytest.raises(InvariantViolation) as info:
        compile_order(prepared, ["save_late", "late", "s", "sum"])
    assert info.value.invariant == "SCH-1"
    with pytest.raises(InvariantViolation) as info:
        scheduler_order(prepared, lambda graph, deps, seed: "sum s")
    assert info.value.invariant == "SCH-1"


def test_a_pipeline_is_reproducible_when_its_passes_are_built_in() -> None:
    from refcompiler.passes import reproducible

    assert reproducible("O0") and reproducible("O2")
    assert not reproducible([lambda program: program])
    assert not reproducible("no-such-pass")


def test_an_order_compiled_under_several_pipelines_is_checked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Its legality is a function of the order and the prepared graph; an
    # illegal order is checked (and refused) every time.
    import refcompiler.driver as driver
    from refcompiler.driver import compile_order, scheduler_order

    checked: list[tuple[str, ...]] = []
    real = driver.check_schedule
    monkeypatch.setattr(driver, "check_schedule", lambda graph, order, *rest: checked.append(order) or real(graph, order, *rest))
    prepared = prepare(GRAPH)
    order = scheduler_order(prepared, "topo")
    for pipeline in ("O0", "O2", "O0"):
        compile_order(prepared, order, pipeline=pipeline)
    assert checked == [order]
    for _ in range(2):
        with pytest.raises(InvariantViolation):
            compile_order(prepared, ["save_late", "late", "s", "sum"])
    assert len(checked) == 3


SAVE_CYCLE_VIEWS = SAVE_CYCLE.parent / "save_cycle_views.json"


@pytest.mark.parametrize("path", [SAVE_CYCLE, SAVE_CYCLE_VIEWS])
def test_the_copies_that_break_a_save_cycle_have_their_inputs_types(path: Path) -> None:
    from refcompiler.verifier import infer_types

    prepared = prepare(load_graph(path))
    assert len(prepared.scheduled.nodes) > len(prepared.graph.nodes)  # copies of storage, and of a view
    assert prepared.types == infer_types(prepared.scheduled)


@pytest.mark.parametrize("path", [SAVE_CYCLE, SAVE_CYCLE_VIEWS])
def test_a_graph_at_the_byte_limit_compiles_though_breaking_its_save_cycle_adds_copies(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # refc check accepted it and refc compile, run and validate refused it: the
    # copies were counted against REFC_MAX_BYTES, "needs 112 bytes" of a graph of 96
    from refcompiler.driver import run_compiled
    from refcompiler.reference import run_reference
    from refcompiler.values import same_bits
    from refcompiler.verifier import infer_types

    graph = load_graph(path)
    needed = sum(4 * s.size for s in graph.storage) + sum(t.nbytes for t in infer_types(graph).values())
    monkeypatch.setenv("REFC_MAX_BYTES", str(needed))
    want = run_reference(graph, runs=2)
    for scheduler in ("topo", "memory", "random"):
        for pipeline in ("O0", "O2"):
            got = run_compiled(compile_graph(graph, scheduler=scheduler, pipeline=pipeline), runs=2)
            assert got.keys() == want.keys() and all(same_bits(got[k], want[k]) for k in want)
