"""``fuzz.time_limit``: a case that runs too long is stopped and reported."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from fuzz.time_limit import CaseTimeout, time_limit


def test_a_case_past_its_limit_is_stopped():
    start = time.monotonic()
    with pytest.raises(CaseTimeout, match="time limit of 0.2 s"):
        with time_limit(0.2):
            while True:  # a pathological case: never ends by itself
                pass
    assert time.monotonic() - start < 5


def test_a_case_within_its_limit_runs_and_the_timer_is_cleared():
    before = signal.getsignal(signal.SIGALRM)
    with time_limit(5):
        total = sum(range(1000))
    assert total == 499500
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is before


def test_no_limit_and_bad_limits():
    with time_limit(None):
        pass
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ValueError):
            with time_limit(bad):
                pass


def test_outside_the_main_thread_it_refuses_rather_than_not_limiting():
    errors = []

    def body():
        try:
            with time_limit(1):
                pass
        except RuntimeError as e:
            errors.append(e)

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert errors and "main thread" in str(errors[0])


def test_a_campaign_reports_a_case_past_its_time_limit_as_a_timeout_finding():
    from fuzz.campaign import CampaignConfig, run_campaign

    config = CampaignConfig(budget=None, max_cases=3, chunk_cases=3, seed=0, workers=1, out=None, case_seconds=1e-4, reduce_attempts=0, shrink_calls=0)
    summary = run_campaign(config)
    assert summary.found, "every case runs past 0.1 ms"
    assert all("timeout: the case ran past its time limit" in f.explanation for f in summary.found.values())
