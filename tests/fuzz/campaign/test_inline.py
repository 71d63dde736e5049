"""The inline executor: the in-process case of the one campaign loop."""

from __future__ import annotations

import pytest

from fuzz.campaign import InlineExecutor


def test_a_call_runs_at_submit_and_its_future_is_done():
    ran = []
    fut = InlineExecutor().submit(lambda x: ran.append(x) or x * 2, 21)
    assert ran == [21] and fut.done() and fut.result() == 42


def test_an_exception_comes_out_of_result_as_from_a_pool():
    def boom():
        raise RuntimeError("boom")

    fut = InlineExecutor().submit(boom)
    with pytest.raises(RuntimeError, match="boom"):
        fut.result()
