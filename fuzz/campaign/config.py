"""What a campaign runs (``CampaignConfig``), checked when it is made."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from refcompiler.errors import UsageError
from refcompiler.graph import Graph

from fuzz.strategies.builder import MAX_DIM

__all__ = ["CampaignConfig", "default_workers", "END_MARGIN", "HARD_GRACE", "MAX_DIM_LIMIT"]

# Seconds past budget + shrink_grace after which running chunks are abandoned:
# the time to reduce and store a failure found just before the deadline.
HARD_GRACE = 5.0

# Seconds before that moment at which a chunk stops the case it is checking
# (``ChunkState.end``), so that it answers before it would be abandoned.
END_MARGIN = 1.0

MAX_DIM_LIMIT = 64  # --max-dim's bound: 262,144 elements in a tensor of rank 3, far within the element limit


@dataclass(frozen=True)
class CampaignConfig:
    """What a campaign runs. ``budget`` (seconds) and ``max_cases`` bound it;
    with ``max_cases`` alone nothing depends on time. ``schedulers`` and
    ``pipeline`` are names or ``module:attribute`` specs (a user's code)."""

    budget: float | None = 60.0
    max_cases: int | None = None
    seed: int = 0
    workers: int = 1
    mutant: str | None = None
    schedulers: tuple[str, ...] = ("topo", "memory", "random")
    pipeline: str = "O2"
    out: Path | None = Path("fuzz-out")
    chunk_cases: int = 50
    max_nodes: int = 10
    # the largest size drawn for an axis of a generated tensor (rank at most 3): larger finds what only large buffers show
    max_dim: int = MAX_DIM
    invalid_share: float = 0.2
    shrink_calls: int = 200
    reduce_attempts: int = 150
    # with a time budget, each new failure may shrink this long past the deadline
    shrink_grace: float = 5.0
    # with a time budget, Hypothesis's own shrinking of a failure stops after this
    # long, so that the graph reducer (which makes the case minimal) has time left
    hypothesis_shrink_seconds: float = 3.0
    stop_on_failure: bool = False
    # the symbolic oracle stage: True on, False off, None on for small graphs
    symbolic: bool | None = None
    # wall-clock seconds one case may take before it is reported as a timeout (None: no limit)
    case_seconds: float | None = 60.0
    command: str | None = None  # the command line that started the campaign, recorded in each case
    # an external compiler to fuzz instead of refc's (refcompiler.targets: a name or module:attr)
    target: str | None = None
    # a campaign over one given valid graph (refc fuzz --graph) instead of generated ones;
    # graph_file names it in the summary and in each stored case's provenance
    graph: Graph | None = None
    graph_file: str | None = None

    def __post_init__(self) -> None:
        if self.budget is None and self.max_cases is None:
            raise UsageError("a campaign needs a time budget, a case count, or both")
        counts = {"max_cases": self.max_cases, "workers": self.workers, "chunk_cases": self.chunk_cases,
                  "max_nodes": self.max_nodes, "max_dim": self.max_dim}
        for name, value in counts.items():  # whole numbers: the generator draws sizes from them
            if value is not None and (type(value) is bool or not isinstance(value, int)):
                raise UsageError(f"{name} must be a whole number, got {value!r}")
        if self.budget is not None and not self.budget > 0:
            raise UsageError(f"the budget must be positive, got {self.budget}")
        if self.max_cases is not None and self.max_cases < 1:
            raise UsageError(f"the case count must be at least 1, got {self.max_cases}")
        if self.workers < 1:
            raise UsageError(f"workers must be at least 1, got {self.workers}")
        if not 0 <= self.invalid_share <= 1:
            raise UsageError(f"invalid_share must be within [0, 1], got {self.invalid_share}")
        if self.chunk_cases < 1 or self.max_nodes < 1:
            raise UsageError("chunk_cases and max_nodes must be at least 1")
        if not 2 <= self.max_dim <= MAX_DIM_LIMIT:
            raise UsageError(f"max_dim (--max-dim) must be from 2 to {MAX_DIM_LIMIT} (a tensor of rank 3 then has up to {MAX_DIM_LIMIT ** 3} elements), got {self.max_dim}")


def default_workers() -> int:
    """The CPUs this process may run on."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))
