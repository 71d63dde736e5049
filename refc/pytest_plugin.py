"""A pytest plugin (registered as the ``refc`` ``pytest11`` entry point):
``pytest --refc-corpus DIR`` collects every corpus case under ``DIR`` (each
``*.json`` file ``refc replay DIR`` replays: a campaign's output directory stands
for its ``cases/``) as a test item that replays it as ``refc replay`` does: a
``"pass"`` case must pass every check, a ``{"reject": ID}`` case must be
rejected with that id, and one recorded with ``"mutant": NAME`` must still
kill it. ``--refc-mutant NAME`` replays them against a mutant with ``refc
replay --mutant``'s verdicts: a case passes whether it kills NAME or not,
unless it is recorded against NAME and no longer kills it. A case file is
data: one that names a user's scheduler, pipeline or target (``module:attr``)
fails as "needs plug-in" unless ``--refc-allow-plugin MODULE`` names its
module, as ``refc replay --allow-plugin`` does (the allowed code runs in the
test process). ``--refc-corpus`` and ``--refc-allow-plugin`` may repeat.

Importing the plugin registers refc's Hypothesis profiles (``refc.profiles``);
without ``--refc-corpus`` it adds nothing to a run.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any, Iterator

import pytest

import refc.profiles  # noqa: F401  (registers the profiles)

__all__ = ["CorpusDir", "CorpusFile", "CorpusCase"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("refc", "refc corpus cases")
    group.addoption("--refc-corpus", action="append", default=[], metavar="DIR", help="collect the refc corpus cases (*.json) under DIR as tests")
    group.addoption("--refc-mutant", default=None, metavar="NAME", help="replay the corpus cases against a refc mutant")
    group.addoption("--refc-allow-plugin", action="append", default=[], metavar="MODULE",
                    help="import MODULE for the cases that name it (a user's scheduler, pipeline or target); without it such a case fails as needing it")


def _roots(config: pytest.Config) -> list[Path]:
    return [Path(p).resolve() for p in config.getoption("refc_corpus")]


def pytest_configure(config: pytest.Config) -> None:
    mutant = config.getoption("refc_mutant")
    if mutant is not None:  # a misspelt mutant would check nothing and pass
        from refcompiler.errors import UsageError
        from refcompiler.mutants import get

        try:
            get(mutant)
        except UsageError as e:
            raise pytest.UsageError(f"--refc-mutant: {e}") from None
    for root in _roots(config):
        if not root.exists():
            raise pytest.UsageError(f"--refc-corpus {root}: no such file or directory")
        if all(Path(a).resolve() != root for a in config.args):
            config.args.append(str(root))


_CASES = pytest.StashKey[frozenset[Path]]()


def _resolved(path: Path) -> Path:
    """``path`` with its links followed as far as they go: a loop of links or a
    link to nothing is a case ``refc replay`` calls malformed, not an error of
    the collection (``Path.resolve`` raises on a loop)."""
    return Path(os.path.realpath(path))


def _case_paths(config: pytest.Config) -> frozenset[Path]:
    """The case files under the roots, as ``refc replay`` lists them (``fuzz.corpus.case_files``), resolved."""
    if _CASES not in config.stash:
        from fuzz.corpus import case_files

        config.stash[_CASES] = frozenset(map(_resolved, case_files(_roots(config))))
    return config.stash[_CASES]


def _under_roots(path: Path, config: pytest.Config) -> bool:
    resolved = _resolved(path)
    return any(resolved == root or resolved.is_relative_to(root) for root in _roots(config))


def _is_case(path: Path, config: pytest.Config) -> bool:
    return _under_roots(path, config) and _resolved(path) in _case_paths(config)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix == ".json" and _is_case(file_path, parent.config):
        return CorpusFile.from_parent(parent, path=file_path)
    return None


def _unread_cases(directory: Path, config: pytest.Config) -> list[Path]:
    """The case files in ``directory`` that are no regular file (a pipe, a
    device, a link to nothing), when it is under a ``--refc-corpus`` root:
    nothing is listed, and nothing of refc imported, for any other directory."""
    if not _under_roots(directory, config):
        return []
    from fuzz.corpus import not_a_case_file

    try:
        entries = sorted(directory.iterdir())
    except OSError:
        return []
    # a link to a device resolves outside the roots: the directory, not the link, is under one
    return [p for p in entries if p.suffix == ".json" and not p.is_dir() and not_a_case_file(p) is not None
            and _resolved(p) in _case_paths(config)]


if hasattr(pytest, "Dir"):  # pytest 8 and later: directories are collected through a hook (before, the plugin goes without)

    def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        """A directory holding a case file that is no regular file: pytest would
        leave it out, and the run pass where ``refc replay`` calls it
        malformed. ``None`` leaves the rest to pytest."""
        if (path / "__init__.py").exists() or not _unread_cases(path, parent.config):
            return None
        return CorpusDir.from_parent(parent, path=path)

    class CorpusDir(pytest.Dir):
        """A directory as pytest collects it, and its case files that are no regular file."""

        def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
            yield from super().collect()
            for path in _unread_cases(self.path, self.config):
                yield CorpusFile.from_parent(self, path=path)


class CorpusFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        yield CorpusCase.from_parent(self, name=self.path.stem)


class CaseFailure(Exception):
    """A corpus case that did not behave as recorded."""


class CorpusCase(pytest.Item):
    plugins: tuple[str, ...] = ()  # the modules of a user's code the case names (known once it is loaded)

    def runtest(self) -> None:
        from fuzz.corpus import load_case, not_a_case_file
        from fuzz.replay import Verdict, judge, plugin_modules
        from refcompiler.errors import RefCompilerError

        mutant = self.config.getoption("refc_mutant")
        unread = not_a_case_file(self.path)  # met in a directory: not waited for, nor read for ever
        if unread is not None:
            raise CaseFailure(f"{Verdict.MALFORMED.value}: {unread}")
        try:
            case = load_case(self.path)
            self.plugins = plugin_modules(case)
            missing = [m for m in self.plugins if m not in self.config.getoption("refc_allow_plugin")]
            if missing:  # a case file is data: nothing it names is imported unless the command line says so
                flags = " ".join(f"--refc-allow-plugin {m}" for m in missing)
                raise CaseFailure(f"{Verdict.NEEDS_PLUGIN.value} {', '.join(missing)}: the case names a user's code (add {flags} to run it)")
            outcome = judge(case, mutant=mutant)  # refc replay's verdict: with a mutant, ok when the case kills it
        except RefCompilerError as e:
            text = str(e)  # a malformed file's message leads with the path the report names already
            raise CaseFailure(text.removeprefix(f"{self.path}: ")) from None
        if outcome.verdict is not Verdict.OK:
            raise CaseFailure(f"{outcome.verdict.value}: {outcome.detail}")

    def replay_command(self) -> str:
        """The ``refc replay`` command that checks this case as this run did: with
        ``--refc-mutant``'s mutant, allowing each plug-in module the case names."""
        words = ["refc", "replay", str(self.path)]
        mutant = self.config.getoption("refc_mutant")
        if mutant is not None:
            words += ["--mutant", mutant]
        for module in self.plugins:
            words += ["--allow-plugin", module]
        return shlex.join(words)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFailure):
            return f"{self.path}: {excinfo.value}\nreplay: {self.replay_command()}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"refc corpus case {self.name}"
