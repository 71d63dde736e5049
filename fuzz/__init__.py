"""The verification suite (DESIGN §7, §8, §10): generators, the oracle chain,
shrinking, campaigns and the corpus. Public names are re-exported here.

They load on first use (PEP 562), as ``refc``'s do: importing one light module,
such as ``fuzz.case`` for ``refc compile CASE``, runs this file first, and must
not pay for Hypothesis, the oracle chain and Z3 that the campaign imports.
Two names are also submodules, ``replay`` and ``schedules``: ``from fuzz import
replay`` is the function unless ``fuzz.replay`` was imported first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from refcompiler.lazy import exports as _exports, names as _names

if TYPE_CHECKING:
    from fuzz.campaign import CampaignConfig, Kill, Summary, run_campaign, score_mutant, write_outputs
    from fuzz.case import PASS, Case, Expect, ExpectKind, reject
    from fuzz.corpus import case_files, load_case, replay, write_case
    from fuzz.oracle import CHAIN, CaseReport, Finding, Location, OracleStage, Signature, Stage, check, check_case
    from fuzz.schedules import ScheduleChoice, ScheduleSource, case_schedules, schedules
    from fuzz.shrink import reduce_graph
    from fuzz.strategies import REJECTABLE, Feature, graphs, invalid_graphs

__all__ = [
    "graphs", "invalid_graphs", "Feature", "REJECTABLE",
    "schedules", "case_schedules", "ScheduleChoice", "ScheduleSource",
    "check", "check_case", "Finding", "Location", "Signature", "Stage", "CaseReport", "CHAIN", "OracleStage",
    "reduce_graph",
    "CampaignConfig", "Summary", "run_campaign", "write_outputs", "Kill", "score_mutant",
    "Case", "Expect", "ExpectKind", "PASS", "reject", "load_case", "write_case", "case_files", "replay",
]

# public name -> (module, attribute)
_LAZY = _names(
    ("fuzz.campaign", ("CampaignConfig", "Kill", "Summary", "run_campaign", "score_mutant", "write_outputs")),
    ("fuzz.case", ("PASS", "Case", "Expect", "ExpectKind", "reject")),
    ("fuzz.corpus", ("case_files", "load_case", "replay", "write_case")),
    ("fuzz.oracle", ("CHAIN", "CaseReport", "Finding", "Location", "OracleStage", "Signature", "Stage", "check", "check_case")),
    ("fuzz.schedules", ("ScheduleChoice", "ScheduleSource", "case_schedules", "schedules")),
    ("fuzz.shrink", ("reduce_graph",)),
    ("fuzz.strategies", ("REJECTABLE", "Feature", "graphs", "invalid_graphs")),
)
__getattr__, __dir__ = _exports(__name__, _LAZY, globals())
