"""The target protocol: a real compiler as something refc's oracles can test.

A *target* is one module exposing an object with:

- ``name`` (str) and ``requirement`` (the pip command that installs what it needs);
- ``missing() -> str | None``: ``None`` when its package imports, else what is missing;
- ``configurations() -> tuple[Configuration, ...]``: what to compare, the first one the
  least optimised;
- ``build(graph) -> program | Refused``: the graph as the target's own program, or a
  refusal (a graph the target cannot express: not a finding);
- ``session(program, config) -> Session``: the program compiled under one
  configuration; ``Session.run(values)`` takes every placeholder and owned variable at
  entry (storage name -> array) and returns, per storage the run writes (saved
  placeholders, owned variables), its value at exit *as the target handed it over*
  (not copied: the harness checks that a later run does not change it);
- ``versions() -> dict[str, str]`` and ``bug_files(program, failing, passing) ->
  dict[str, bytes]`` (the model file and a script in the target's own API), for bug
  folders (``refcompiler.targets.bugs``).

``execute`` is the harness: ``runs`` runs of one session, carrying placeholders and
owned state from run to run as DESIGN §3 says, keeping each returned array and a copy
of it, and of every input it fed; after the last run, any of them that changed is
reported. A target's exception is contained per configuration (``ConfigRun.error``);
a crash or hang of the whole process is ``refcompiler.targets.isolate``'s business.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol

import numpy as np

from refcompiler.graph import Graph, StorageKind
from refcompiler.values import Values, bind_inputs, same_bits

__all__ = ["Configuration", "Refused", "Session", "Target", "ConfigRun", "Outcome", "execute", "execute_all", "first_missing", "written_storage"]


@dataclass(frozen=True)
class Configuration:
    """One way to compile. ``key`` names it (``refc run --config KEY``); ``options``
    are the target's own settings; configurations with one ``level`` promise
    bit-identical results (they differ only in memory reuse or execution order)."""

    key: str
    level: str
    options: tuple[tuple[str, Any], ...] = ()

    def option(self, name: str) -> Any:
        return dict(self.options)[name]


@dataclass(frozen=True)
class Refused:
    """A graph the target cannot express (not a finding)."""

    reason: str


class Session(Protocol):
    def run(self, values: Values) -> Mapping[str, np.ndarray]: ...


class Target(Protocol):
    name: str
    requirement: str

    def missing(self) -> str | None: ...
    def configurations(self) -> tuple[Configuration, ...]: ...
    def build(self, graph: Graph) -> Any: ...
    def session(self, program: Any, config: Configuration) -> Session: ...
    def versions(self) -> dict[str, str]: ...
    def bug_files(self, program: Any, failing: Configuration, passing: Configuration | None) -> dict[str, bytes]: ...


@dataclass
class ConfigRun:
    """One configuration's runs: ``runs[k]`` every placeholder and owned variable
    after run k+1 (copies); ``error``: what the target raised, if it did (the runs
    before it are kept); ``changed``: arrays handed over or fed in that a later
    run changed, e.g. ``"returned 'w' of run 1, after run 2"``."""

    config: Configuration
    runs: list[Values] = field(default_factory=list)
    error: str | None = None
    changed: list[tuple[str, int]] = field(default_factory=list)  # (storage, run) of each array changed
    changed_text: list[str] = field(default_factory=list)  # and what it was, in words


@dataclass
class Outcome:
    """A graph through a target: refused, crashed (the process died or hung), or
    one ``ConfigRun`` per configuration."""

    refused: str | None = None
    crash: str | None = None
    hung: bool = False
    crash_config: str | None = None  # the configuration that crashes on its own, when found
    crash_passing: str | None = None  # one that does not
    results: list[ConfigRun] = field(default_factory=list)
    entry: Values | None = None  # every placeholder and owned variable at entry to run 1


def first_missing(*modules: str) -> str | None:
    """The first of ``modules`` that cannot be imported (a target's ``missing``)."""
    for module in modules:
        try:
            __import__(module)
        except ImportError:
            return module
    return None


def written_storage(graph: Graph) -> list[str]:
    """The storage a run writes: saved placeholders and owned variables, in storage order."""
    saved = {n.target for n in graph.saves()}
    return [s.name for s in graph.storage if s.kind is StorageKind.OWNED or (s.kind is StorageKind.PLACEHOLDER and s.name in saved)]


def execute(target: Target, program: Any, config: Configuration, graph: Graph, entry: Values, runs: int) -> ConfigRun:
    """``runs`` runs of ``program`` under ``config`` from ``entry`` (every placeholder
    and owned variable), carrying what each run writes into the next."""
    result = ConfigRun(config)
    kept: list[tuple[str, int, np.ndarray, np.ndarray]] = []  # (what, run, the array handed over, its copy)

    def changed(name: str, k: int, text: str) -> None:
        result.changed.append((name, k))
        result.changed_text.append(text)

    try:
        session = target.session(program, config)
        values = {k: v.copy() for k, v in entry.items()}
        for k in range(1, runs + 1):
            # each run is fed arrays of its own: a write into one is seen, and never reaches the next run
            fed = {name: a.copy() for name, a in values.items()}
            before = {name: a.copy() for name, a in fed.items()}
            got = session.run(fed)
            for n, a in fed.items():
                if same_bits(a, before[n]):
                    kept.append((f"input '{n}'", k, a, before[n]))
                else:
                    changed(n, k, f"input '{n}' of run {k} written by run {k}")
            missing = set(written_storage(graph)) - set(got)
            if missing:
                raise RuntimeError(f"run {k} returned no value for {sorted(missing)}")
            kept += [(f"returned '{n}'", k, a, np.array(a, copy=True)) for n, a in got.items()]
            values = {**values, **{n: np.array(a, copy=True) for n, a in got.items()}}
            result.runs.append(values)
    except Exception as e:  # the target's own failure: a finding, contained here
        result.error = f"run {len(result.runs) + 1}: {type(e).__name__}: {_first_line(e)}" + _where(e)
    for what, k, array, copy in kept:
        if not same_bits(np.asarray(array), copy):
            changed(what.split("'")[1], k, f"{what} of run {k} changed by a later run")
    return result


def _first_line(e: BaseException) -> str:
    """The first non-empty line of the message: a finding is one line (torch appends
    paragraphs of advice to its errors)."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[0] if lines else ""


def _where(e: BaseException) -> str:
    frames = traceback.extract_tb(e.__traceback__)
    return f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""


def execute_all(target: Target, graph: Graph, inputs: Mapping[str, np.ndarray] | None = None, runs: int = 2, only: str | None = None) -> Outcome:
    """Every configuration (or only the one keyed ``only``) of ``target`` on ``graph``.
    What ``build`` raises is the target's crash, named so (not the harness's)."""
    try:
        program = target.build(graph)
    except Exception as e:
        return Outcome(crash=f"build() raised {type(e).__name__}: {str(e)[:300]}{_where(e)}")
    if isinstance(program, Refused):
        return Outcome(refused=program.reason)
    entry = bind_inputs(graph, inputs or {})
    configs = [c for c in target.configurations() if only is None or c.key == only]
    return Outcome(results=[execute(target, program, c, graph, entry, runs) for c in configs], entry=entry)
