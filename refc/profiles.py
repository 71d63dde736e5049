"""Hypothesis profiles for suites that fuzz with refc's strategies.

``refc-ci``: few examples, no deadline, derandomized (a CI run that gives the
same answer twice); ``refc-dev``: many examples, for a long run at a desk.
Importing this module registers them; load one with
``hypothesis.settings.load_profile("refc-ci")`` or ``pytest
--hypothesis-profile=refc-ci``.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

__all__ = ["CI", "DEV"]

CI = "refc-ci"
DEV = "refc-dev"

settings.register_profile(
    CI,
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(DEV, max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
