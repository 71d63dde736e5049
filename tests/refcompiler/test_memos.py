"""The caches of graph and program objects, emptied between a campaign's cases."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from refcompiler import memos
from refcompiler.driver import compile_graph, run_compiled
from refcompiler.graph_json import load_graph

ROOT = Path(__file__).resolve().parents[2]


def test_forget_empties_every_cache_kept_and_calls_every_clear() -> None:
    table: dict[int, object] = memos.kept({})
    cleared = []
    memos.on_forget(lambda: cleared.append(1))
    table[1] = object()
    memos.forget()
    assert table == {} and cleared == [1]


def test_after_forget_no_cache_holds_a_compiled_program() -> None:
    """A program compiled, run and validated, then dropped by its caller, dies
    once the caches are emptied (without the collector: no cycle holds it)."""
    graph = load_graph(ROOT / "examples" / "read_then_save.json")
    compiled = compile_graph(graph, pipeline="O2")
    run_compiled(compiled, runs=2)
    program = weakref.ref(compiled.program)
    del compiled
    enabled = gc.isenabled()
    gc.disable()
    try:
        assert program() is not None  # the caches hold it
        memos.forget()
        assert program() is None
    finally:
        if enabled:
            gc.enable()
