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

    with pytest.raises(ExecutionError, match="pass broken_pass raised KeyError"):
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
