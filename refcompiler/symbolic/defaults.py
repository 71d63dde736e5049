"""The validator's default bounds, in a module that imports nothing: the
command line shows them in ``--help`` without loading the validator and Z3."""

from __future__ import annotations

__all__ = ["DEFAULT_TIMEOUT", "DEFAULT_MAX_TERMS", "DEFAULT_ORDER_LIMIT", "DEFAULT_ALL_SECONDS"]

DEFAULT_TIMEOUT = 10.0  # seconds Z3 may take on one validation
DEFAULT_MAX_TERMS = 5_000_000  # the memory a graph file can make a validation use is bounded (DESIGN §12)
DEFAULT_ORDER_LIMIT = 20_000  # legal orders ``validate_all_schedules`` covers at most
DEFAULT_ALL_SECONDS = 600.0  # seconds ``validate_all_schedules`` starts new orders for (each Z3 call has ``DEFAULT_TIMEOUT``)
