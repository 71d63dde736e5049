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


def test_fewer_collections_raises_the_youngest_threshold_and_restores_it() -> None:
    from refcompiler.collector import YOUNG, fewer_collections

    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold() == (max(YOUNG, before[0]), *before[1:])
        with fewer_collections():
            pass
        assert gc.get_threshold()[0] == max(YOUNG, before[0])  # the outer block's setting holds
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0  # nothing set aside from the collector


def test_cycles_made_under_fewer_collections_are_still_collected() -> None:
    import weakref

    from refcompiler.collector import fewer_collections

    class Node:
        pass

    kept = Node()  # alive when the block begins, a garbage cycle within it
    kept.other = kept
    gone_too = weakref.ref(kept)
    with fewer_collections():
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle: reference counting alone never frees it
        gone = weakref.ref(a)
        del a, b, kept
        gc.collect()
        assert gone() is None and gone_too() is None


def test_fewer_collections_leaves_automatic_collection_off_and_still_collects_when_on() -> None:
    import weakref

    from refcompiler.collector import YOUNG, fewer_collections

    before = gc.get_threshold()
    try:
        gc.set_threshold(0)  # automatic collection off: a block must not turn it on
        with fewer_collections():
            assert gc.get_threshold()[0] == 0
        gc.set_threshold(700)
        assert gc.isenabled()

        class Node:
            pass

        with fewer_collections():
            a = Node()
            a.me = a  # a cycle, freed by no reference count
            gone = weakref.ref(a)
            del a
            kept = [[] for _ in range(3 * YOUNG)]  # allocations enough for a collection of its own
            assert gone() is None
            del kept
    finally:
        gc.set_threshold(*before)
