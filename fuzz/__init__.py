"""The verification suite (DESIGN §7, §8, §10): generators, the oracle chain,
shrinking, campaigns and the corpus. Public names are re-exported here."""

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
