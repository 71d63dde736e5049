"""The collector pause: nested and concurrent pauses share one; the collector
resumes only if it ran before."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

from refcompiler.collector import collector_paused
from refcompiler.driver import compile_graph
from refcompiler.graph_json import load_graph

GRAPH = load_graph(Path(__file__).resolve().parents[2] / "examples" / "read_then_save.json")


def test_a_collector_paused_by_the_caller_stays_paused() -> None:
    gc.disable()
    try:
        compile_graph(GRAPH)
        assert not gc.isenabled()
    finally:
        gc.enable()
    with collector_paused():
        with collector_paused():
            pass
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()


def test_concurrent_pauses_resume_the_collector_when_the_last_ends() -> None:
    first_in, second_done = threading.Event(), threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with collector_paused():
            first_in.set()
            second_done.wait(5)
            seen.append(gc.isenabled())  # the other thread's pause ended; this one holds

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(5)
    with collector_paused():
        pass
    second_done.set()
    thread.join(5)
    assert seen == [False] and gc.isenabled()
