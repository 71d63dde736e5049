"""Scoring a mutant: a campaign that stops at the first kill."""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass

from fuzz.campaign.config import CampaignConfig
from fuzz.campaign.failure import Failure
from fuzz.campaign.runner import run_campaign

__all__ = ["Kill", "ScoreInterrupted", "score_mutant"]


class ScoreInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM ended a scoring campaign: the score stops there (an
    interrupted campaign says nothing of whether the mutant survives)."""

    def __init__(self, signal_name: str):
        super().__init__(signal_name)
        self.signal_name = signal_name


@dataclass(frozen=True)
class Kill:
    """How a campaign fared against one mutant. ``seconds``: from the start
    to the first failing case that is the mutant's doing (``None``: it
    survived); ``failure``: that failure, shrunk."""

    mutant: str
    seconds: float | None
    cases: int
    failure: Failure | None

    @property
    def killed(self) -> bool:
        return self.failure is not None


def score_mutant(mutant: str, *, budget: float = 60.0, seed: int = 0, workers: int = 1, executor: Executor | None = None) -> Kill:
    """Run a campaign against ``mutant`` until its first kill (a failure whose
    shrunk case passes on the correct compiler) or the budget runs out."""
    config = CampaignConfig(budget=budget, seed=seed, workers=workers, mutant=mutant, stop_on_failure=True, out=None)
    summary = run_campaign(config, executor=executor)
    if summary.interrupted:
        raise ScoreInterrupted(summary.interrupted)
    kills = sorted((f for f in summary.found.values() if f.passes_without_mutant), key=lambda f: f.found_at)
    if not kills:
        return Kill(mutant, None, summary.cases, None)
    return Kill(mutant, kills[0].found_at - summary.start, summary.cases, kills[0])
