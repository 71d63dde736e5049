"""The driver treats a user's scheduler or pass as untrusted code: what it gets
wrong is a finding about it (SCH-1, or an ExecutionError naming it), never a
crash of refc."""

from __future__ import annotations

from pathlib import Path

import pytest

from refcompiler.driver import compile_graph
from refcompiler.errors import ExecutionError, InvariantViolation
from refcompiler.graph_json import load_graph

GRAPH = load_graph(Path(__file__).resolve().parents[2] / "examples" / "read_then_save.json")


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
