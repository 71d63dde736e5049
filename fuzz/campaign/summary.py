"""The totals of a campaign (``Summary``) and their document form."""

from __future__ import annotations

import os
import shlex
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuzz.campaign.chunk import ChunkResult
from fuzz.campaign.config import CampaignConfig
from fuzz.campaign.failure import Failure
from fuzz.campaign.unsettled import UnsettledCase, kept
from fuzz.oracle import Signature

__all__ = ["SUMMARY_FORMAT", "Summary", "plugin_folders", "plugin_modules", "replay_command", "validate_command"]

SUMMARY_FORMAT = "refc-fuzz-summary/1"
PROGRESS_POINTS = 500  # a summary's progress series holds between this many and twice as many points


def plugin_modules(config: CampaignConfig) -> list[str]:
    """The modules of the user's code a campaign ran (``module:attribute``
    specs of its schedulers, pipeline and target), in order."""
    specs = [*config.schedulers, *(item.strip() for item in config.pipeline.split(",")), *([config.target] if config.target else [])]
    return list(dict.fromkeys(spec.partition(":")[0] for spec in specs if ":" in spec))


def replay_command(config: CampaignConfig, case_path: str) -> str:
    """The command that replays a stored case as the campaign saw it: with its
    mutant, allowing each plug-in module the case names, and with
    ``PYTHONPATH`` set to the folders those modules were imported from when
    the campaign found them on its ``PYTHONPATH`` (``plugin_folders``): a
    shell without it then runs the command as the campaign's did. (A module
    found in the current folder is found there again: the command, whose
    case path may be relative, is run from there.)"""
    return _command(config, ["refc", "replay", case_path])


def validate_command(config: CampaignConfig, case_path: str) -> str:
    """The command that validates a stored unsettled case (``unsettled``)
    symbolically as the campaign's symbolic stage did: with its Z3 time limit,
    mutant and plug-ins, as ``replay_command``."""
    from fuzz.oracle.stages.symbolic import TIMEOUT

    return _command(config, ["refc", "validate", case_path, "--timeout", f"{TIMEOUT:g}"])


def _command(config: CampaignConfig, words: list[str]) -> str:
    modules = plugin_modules(config)
    if config.mutant:
        words += ["--mutant", config.mutant]
    for module in modules:
        words += ["--allow-plugin", module]
    folders = plugin_folders(modules)
    command = shlex.join(words)
    return f"PYTHONPATH={shlex.quote(os.pathsep.join(folders))} {command}" if folders else command


def plugin_folders(modules: list[str]) -> list[str]:
    """The ``PYTHONPATH`` folders (absolute) that the imported ``modules`` were
    found in; a module that is not imported, or was found elsewhere
    (installed, in the current folder), needs none."""
    searched = {Path(e).resolve() for e in os.environ.get("PYTHONPATH", "").split(os.pathsep) if e}
    folders: list[str] = []
    for name in modules:
        file = getattr(sys.modules.get(name), "__file__", None)
        if not isinstance(file, str):
            continue
        root = Path(file).resolve().parent
        for _ in range(name.count(".") + (Path(file).name == "__init__.py")):
            root = root.parent
        if root in searched and str(root) not in folders:
            folders.append(str(root))
    return folders


@dataclass
class Summary:
    """Totals of a campaign (mutable while it runs)."""

    config: CampaignConfig
    cases: int = 0
    invalid_cases: int = 0
    schedules: int = 0
    failures: int = 0
    seconds: float = 0.0
    chunks: int = 0
    planned: int = 0  # cases handed to chunks so far (a chunk may evaluate fewer: repeats are skipped)
    stopped_by: str = ""
    found: dict[Signature, Failure] = field(default_factory=dict)
    start: float = field(default_factory=time.time)
    case_files: dict[Signature, str] = field(default_factory=dict)
    interrupted: str | None = None  # the signal's name (SIGINT, SIGTERM) that ended the campaign
    # chunks whose worker died ("kind": "died"), that still ran at the hard deadline ("deadline"),
    # or that ended with a case unchecked when the campaign's time was up ("cut"); "reason" says it
    lost_chunks: list[dict[str, Any]] = field(default_factory=list)
    phase: str = "starting"
    found_in: dict[Signature, tuple[int, int]] = field(default_factory=dict)  # the chunk (index, part) each kept failure came from
    refused: Counter[str] = field(default_factory=Counter)  # graphs an external target refused, by reason
    seconds_by_stage: Counter[str] = field(default_factory=Counter)  # the chunks' wall-clock seconds, where they went
    # (seconds since start, cases, schedules) as each chunk ended: the report's throughput over time
    progress: list[tuple[float, int, int]] = field(default_factory=lambda: [(0.0, 0, 0)])
    # programs the symbolic stage could neither prove nor refute (not findings: no exit code says them), in how
    # many cases, and the first of those cases of distinct kinds (``unsettled.kept``) by (chunk index, part, place in the chunk)
    unsettled: int = 0
    unsettled_cases: int = 0
    unsettled_kept: list[tuple[tuple[int, int, int], UnsettledCase]] = field(default_factory=list)
    unsettled_files: list[str] = field(default_factory=list)  # their case files, relative to the output directory

    @property
    def failed(self) -> bool:
        return self.failures > 0 or bool(self.found)

    @property
    def inconclusive(self) -> bool:
        """Nothing failed, yet the campaign cannot say its cases pass: no valid
        case was checked though chunks were lost (a user's scheduler or pass
        that hangs on every graph), or a worker died (a crash in a compiler's
        native code, a plug-in's ``os._exit``, the machine's OOM killer)."""
        if self.failed or not self.lost_chunks:
            return False
        return self.cases == self.invalid_cases or any(lost.get("kind") == "died" for lost in self.lost_chunks)

    @property
    def killed(self) -> bool:
        """A failure that is the mutant's doing (its case passes without the
        mutant), or any failure when the campaign has no mutant."""
        return any(f.passes_without_mutant is not False for f in self.found.values())

    def rates(self) -> tuple[float, float]:
        s = max(self.seconds, 1e-9)
        return self.cases / s, self.schedules / s

    def time_shares(self) -> dict[str, dict[str, float]]:
        """Where the chunks' time went, most first: per oracle stage (its name),
        deriving schedules, generating (the case generator, and Hypothesis's shrinking) and
        reducing failures; each with its seconds (summed over workers) and its
        share of the total."""
        total = max(sum(self.seconds_by_stage.values()), 1e-9)
        return {k: {"seconds": round(v, 3), "share": round(v / total, 3)} for k, v in self.seconds_by_stage.most_common()}

    def absorb(self, result: ChunkResult) -> None:
        """Add a chunk's counts; keep the smallest failure per signature, then
        the one of the lowest chunk index and part (so that the order in which
        chunks end does not matter)."""
        self.cases += result.cases
        self.invalid_cases += result.invalid_cases
        self.schedules += result.schedules
        self.failures += result.failures
        self.chunks += 1
        self.refused.update(dict(result.refused))
        self.seconds_by_stage.update(dict(result.seconds_by_stage))
        self.progress.append((time.time() - self.start, self.cases, self.schedules))
        if result.cut is not None:
            self.lost_chunks.append({"chunk": result.index, "cases": 1, "reason": result.cut, "kind": "cut"})
        self.unsettled += result.unsettled
        self.unsettled_cases += result.unsettled_cases
        both = sorted(self.unsettled_kept + [((result.index, result.part, k), u) for k, u in enumerate(result.unsettled_kept)],
                      key=lambda item: item[0])  # the lowest places: whichever chunk ends first
        self.unsettled_kept = kept(both, lambda item: item[1])
        if len(self.progress) > 2 * PROGRESS_POINTS:  # a long campaign: every other point, the first and last kept
            self.progress[1:-1] = self.progress[2:-1:2]
        for failure in result.found:
            old = self.found.get(failure.signature)
            where = (result.index, result.part)
            if old is None or (failure.nodes, where) < (old.nodes, self.found_in[failure.signature]):
                self.found[failure.signature] = failure
                self.found_in[failure.signature] = where

    def _signature_doc(self, sig: Signature) -> dict[str, Any]:
        f = self.found[sig]
        case = self.case_files.get(sig)
        return {
            "signature": sig.to_doc(),
            "text": str(sig),
            "explanation": f.explanation,
            "case": case,
            "nodes": f.nodes,
            "nodes_before_reduction": f.original_nodes,
            "reproduces": f.reproduces,
            "reproduces_reason": f.not_reproduced,
            # the command as the console prints it: run where the campaign ran (where its plug-ins import)
            "replay": None if case is None else replay_command(self.config, case if self.config.out is None else str(self.config.out / case)),
            "passes_without_mutant": f.passes_without_mutant,
            "seconds_to_find": round(f.found_at - self.start, 3),
        }

    def _unsettled_doc(self) -> dict[str, Any]:
        """``symbolic_inconclusive``: what the symbolic stage left unsettled
        (not findings), counted, and the first cases with their files and the
        ``refc validate`` command that looks at each again."""
        kept = []
        for k, (_, u) in enumerate(self.unsettled_kept):
            case = self.unsettled_files[k] if k < len(self.unsettled_files) else None
            path = case if case is None or self.config.out is None else str(self.config.out / case)
            kept.append({**u.to_doc(), "case": case, "validate": None if path is None else validate_command(self.config, path)})
        return {"programs": self.unsettled, "cases": self.unsettled_cases, "kept": kept}

    def to_doc(self) -> dict[str, Any]:
        cps, sps = self.rates()
        c = self.config
        return {
            "format": SUMMARY_FORMAT,
            "seed": c.seed,
            "workers": c.workers,
            "mutant": c.mutant,
            "budget": c.budget,
            "max_cases": c.max_cases,
            "schedulers": list(c.schedulers),
            "pipeline": c.pipeline,
            "graph": c.graph_file,  # refc fuzz --graph: the one graph every case is; None: generated graphs
            "max_nodes": c.max_nodes,
            "max_dim": c.max_dim,
            "symbolic": {None: "auto", True: "on", False: "off"}[c.symbolic],
            "case_seconds": c.case_seconds,
            "command": c.command,
            "cases": self.cases,
            "invalid_cases": self.invalid_cases,
            "schedules": self.schedules,
            "failures": self.failures,
            "distinct_failures": len(self.found),
            "signatures": [self._signature_doc(sig) for sig in sorted(self.found)],
            "symbolic_inconclusive": self._unsettled_doc(),
            "stopped_by": self.stopped_by,
            "interrupted": self.interrupted,
            "complete": self.phase == "done",
            "lost_chunks": list(self.lost_chunks),
            "seconds": round(self.seconds, 3),
            "cases_per_second": round(cps, 2),
            "schedules_per_second": round(sps, 2),
            "seconds_by_stage": self.time_shares(),
            "progress": [{"seconds": round(t, 3), "cases": c, "schedules": n} for t, c, n in self.progress],
            **({"target": self._target_doc()} if c.target else {}),
        }

    def _target_doc(self) -> dict[str, Any]:
        """An external target's figures: its configurations, the graphs it refused
        (the five most common reasons), graphs per second, all and compiled only."""
        from refcompiler.targets import resolve_target

        refused = sum(self.refused.values())
        s = max(self.seconds, 1e-9)
        return {
            "name": self.config.target,
            "configurations": len(resolve_target(str(self.config.target)).configurations()),
            "graphs": self.cases,
            "refused": refused,
            "refusal_reasons": [[reason, n] for reason, n in self.refused.most_common(5)],
            "graphs_per_second": round(self.cases / s, 2),
            "compiled_graphs_per_second": round((self.cases - refused) / s, 2),
        }
