"""Targets built to break one promise each, named as ``module:attribute`` by the
tests (the child process of ``refcompiler.targets.isolate`` imports them too).

``ReferenceTarget`` runs refc's reference as its "compiled program": correct.
Each planted one changes one thing: it reuses one output buffer across runs
(``ALIASING``), corrupts the previous run's returned output (``CORRUPTS_PREVIOUS``),
writes into its inputs (``WRITES_INPUT``) or its owned state (``WRITES_STATE``), differs by one ULP in one configuration
(``ONE_CONFIG_OFF``), is off from the reference everywhere (``WRONG``), raises
(``RAISES``), kills its process (``SEGFAULTS``), never answers (``HANGS``),
refuses every graph (``REFUSES``), or needs a package that is not installed
(``MISSING``)."""

from __future__ import annotations

import os
import signal
import time

import numpy as np

from refcompiler.graph import Graph, StorageKind
from refcompiler.reference import run_reference
from refcompiler.targets.base import Configuration, Refused, written_storage


class _Session:
    def __init__(self, owner: "ReferenceTarget", graph: Graph, config: Configuration):
        self.owner, self.graph, self.config = owner, graph, config
        self.buffers: dict[str, np.ndarray] = {}
        self.previous: dict[str, np.ndarray] = {}

    def run(self, values):
        out = run_reference(self.graph, values)
        got = {s: out[s] for s in written_storage(self.graph)}
        return self.owner.tamper(self, got, values)


class ReferenceTarget:
    name = "reference"
    requirement = "nothing"

    def missing(self):
        return None

    def configurations(self):
        return (Configuration("base", "one"), Configuration("reuse", "one"), Configuration("fast", "two"))

    def build(self, graph):
        return graph

    def session(self, program, config):
        return _Session(self, program, config)

    def versions(self):
        return {"fake": "1"}

    def bug_files(self, program, failing, passing):
        return {"program.txt": f"{program.name}: {failing.key} vs {passing.key if passing else None}".encode()}

    def tamper(self, session, got, values):
        return got


class Aliasing(ReferenceTarget):
    """Writes every result into one buffer per storage, reused by the next run."""

    def tamper(self, session, got, values):
        for s, a in got.items():
            buf = session.buffers.setdefault(s, np.empty_like(a))
            buf[...] = a
            got[s] = buf
        return got


class CorruptsPrevious(ReferenceTarget):
    def tamper(self, session, got, values):
        for a in session.previous.values():
            a.reshape(-1)[:1] = 7
        session.previous = got
        return got


class WritesInput(ReferenceTarget):
    def tamper(self, session, got, values):
        for a in values.values():
            if a.dtype.kind == "f":
                a.reshape(-1)[:1] += 1
        return got


class WritesState(ReferenceTarget):
    """Returns each owned variable's new value in the array it was handed (zero-copy state)."""

    def tamper(self, session, got, values):
        for s, a in got.items():
            if s in values and session.graph.storage_by_name[s].kind is StorageKind.OWNED:
                values[s][...] = a
                got[s] = values[s]
        return got


class OneConfigOff(ReferenceTarget):
    def tamper(self, session, got, values):
        if session.config.key == "reuse":
            for a in got.values():
                if a.dtype.kind == "f":
                    a.reshape(-1)[:1] = np.nextafter(a.reshape(-1)[:1], np.float32(np.inf))
        return got


class Wrong(ReferenceTarget):
    def tamper(self, session, got, values):
        return {s: (a * 2 + 1).astype(a.dtype) for s, a in got.items()}


class Raises(ReferenceTarget):
    def tamper(self, session, got, values):
        raise RuntimeError("planted failure")


class Segfaults(ReferenceTarget):
    def tamper(self, session, got, values):
        if session.config.key == "fast":
            os.kill(os.getpid(), signal.SIGSEGV)
        return got


class Hangs(ReferenceTarget):
    def tamper(self, session, got, values):
        time.sleep(3600)


class Refuses(ReferenceTarget):
    def build(self, graph):
        return Refused("planted refusal")


class Missing(ReferenceTarget):
    requirement = "pip install not-a-real-package"

    def missing(self):
        return "not_a_real_package"


class EscapingFiles(Wrong):
    """A wrong target whose bug files name places outside its bug folder."""

    def bug_files(self, program, failing, passing):
        return {"../../summary.json": b"clobbered", "ok.txt": b"x"}


class TextFiles(Wrong):
    """A wrong target whose bug files are text, not bytes."""

    def bug_files(self, program, failing, passing):
        return {"repro.py": "print('hi')"}


REFERENCE = ReferenceTarget()
ALIASING = Aliasing()
ESCAPING_FILES = EscapingFiles()
TEXT_FILES = TextFiles()
CORRUPTS_PREVIOUS = CorruptsPrevious()
WRITES_INPUT = WritesInput()
WRITES_STATE = WritesState()
ONE_CONFIG_OFF = OneConfigOff()
WRONG = Wrong()
RAISES = Raises()
SEGFAULTS = Segfaults()
HANGS = Hangs()
REFUSES = Refuses()
MISSING = Missing()


class CorruptsSecondRun:
    """A real target (``inner``) with the configurations whose key starts with
    ``prefix`` off by one ULP on the second run: a planted TGT-2, for the
    target's tests and bug folders (whose repro, on the real target, then passes)."""

    def __init__(self, inner, prefix, name):
        self.inner, self.prefix = inner, prefix
        self.name, self.requirement = name, inner.requirement

    def __getattr__(self, attr):
        return getattr(self.inner, attr)

    def session(self, program, config):
        inner = self.inner.session(program, config)
        calls = []
        prefix = self.prefix

        class Off:
            def run(self, values):
                got = dict(inner.run(values))
                calls.append(1)
                if len(calls) == 2 and config.key.startswith(prefix):
                    got = {s: np.nextafter(a, np.float32(np.inf)) if a.dtype.kind == "f" else a for s, a in got.items()}
                return got

        return Off()


class _Lazy:
    """A planted target built on first use (its real target's package is imported then)."""

    def __init__(self, make):
        self.make, self.made = make, None

    def __getattr__(self, attr):
        if self.made is None:
            self.made = self.make()
        return getattr(self.made, attr)


def _ort():
    from refcompiler.targets.onnxruntime import PAIRS

    return CorruptsSecondRun(PAIRS, "disable.mem_pattern=off", "ort-planted")


def _tvm():
    from refcompiler.targets.tvm_relax import TARGET

    return CorruptsSecondRun(TARGET, "inplace", "tvm-planted")


ORT_PLANTED = _Lazy(_ort)
TVM_PLANTED = _Lazy(_tvm)


class _Broken(ReferenceTarget):
    """Keeps the protocol but for one method, set by ``broken``."""


def broken(**methods):
    return type("Broken", (_Broken,), methods)()


def _raise(*args):
    raise RuntimeError("planted")


def _exit(*args):
    raise SystemExit(3)


class _NameRaises(ReferenceTarget):
    @property
    def name(self):
        raise RuntimeError("planted name")


MISSING_RAISES = broken(missing=_raise)
MISSING_EXITS = broken(missing=_exit)
MISSING_NOT_TEXT = broken(missing=lambda self: 5)
CONFIGURATIONS_RAISE = broken(configurations=_raise)
CONFIGURATIONS_NONE = broken(configurations=lambda self: None)
CONFIGURATIONS_EMPTY = broken(configurations=lambda self: ())
CONFIGURATIONS_GENERATOR = broken(configurations=lambda self: (c for c in ReferenceTarget().configurations()))
CONFIGURATIONS_OF_TEXT = broken(configurations=lambda self: ("a", "b"))
CONFIGURATIONS_REPEATED = broken(configurations=lambda self: (Configuration("a", "one"), Configuration("a", "two")))
NAME_RAISES = _NameRaises()
BUILD_RAISES = broken(build=_raise)


class BuildSegfaults(Wrong):
    """A wrong target whose build() kills its process."""

    def build(self, graph):
        os.kill(os.getpid(), signal.SIGSEGV)


class SurrogateFiles(Wrong):
    """A wrong target whose bug file's name no file system takes (a lone surrogate)."""

    def bug_files(self, program, failing, passing):
        return {"\ud800.txt": b"x"}


BUILD_SEGFAULTS = BuildSegfaults()
SURROGATE_FILES = SurrogateFiles()
