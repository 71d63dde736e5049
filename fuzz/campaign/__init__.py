"""The campaign runner (DESIGN §8): generate cases, check them, shrink and
deduplicate failures, write a summary, JUnit XML and corpus cases.

Work is cut into *chunks* (``chunk``), each in a worker, drawing cases at
random (``cases.random_case``) and checking them with the oracle chain; a
chunk's new failure is shrunk (Hypothesis, from the case's recorded choices,
then the graph reducer) and stored (``failure``). Every seed
derives from the campaign seed and the chunk index, and a count-bounded
campaign (``max_cases``) makes no decision based on time, so one worker and
one seed give one summary (timings aside). ``runner`` is the one loop over
chunks, in this process or in an executor; ``progress``, ``summary`` and
``reports`` show and write the outcome; ``score`` scores a mutant.
"""

from fuzz.campaign.cases import chunk_seed, fuzz_cases
from fuzz.campaign.chunk import Chunk, ChunkResult, run_chunk
from fuzz.campaign.config import CampaignConfig, default_workers
from fuzz.campaign.failure import Failure
from fuzz.campaign.progress import NoProgress, PlainProgress, Progress, RichProgress
from fuzz.campaign.reports import junit_xml, write_outputs
from fuzz.campaign.runner import InlineExecutor, run_campaign
from fuzz.campaign.score import Kill, score_mutant
from fuzz.campaign.summary import Summary

__all__ = [
    "CampaignConfig",
    "default_workers",
    "Chunk",
    "ChunkResult",
    "Failure",
    "Summary",
    "chunk_seed",
    "fuzz_cases",
    "run_campaign",
    "run_chunk",
    "InlineExecutor",
    "write_outputs",
    "junit_xml",
    "Progress",
    "PlainProgress",
    "RichProgress",
    "NoProgress",
    "Kill",
    "score_mutant",
]
