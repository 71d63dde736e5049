"""Helpers shared by the command modules: loading a graph, mutants, output."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from refcompiler.errors import InvariantViolation, UsageError
from refcompiler.files import check_writable_dir, check_writable_file, locked_dir
from refcompiler.limits import shown

if TYPE_CHECKING:
    from refcompiler.graph import Graph
    from refcompiler.proofs import Verdict

__all__ = ["BUILT_IN_SCHEDULERS", "derived_out", "add_compile_arguments", "node_order", "add_graph_argument", "add_mutant_argument", "load", "file_path", "in_file", "whole", "whole_number", "size_list", "positive_seconds",
           "out_dir", "out_file", "not_an_input", "locked_out", "cores", "worker_count", "verdict_exit"]


# The names of ``refcompiler.schedulers.SCHEDULERS`` (tests/cli/test_startup.py keeps
# them equal), spelt here because ``--help`` must not import the schedulers (networkx).
BUILT_IN_SCHEDULERS = ("topo", "memory", "random")


def file_path(text: str) -> str:
    """An argparse type for a file name: an empty one (``--out ""``, an unset
    shell variable) is bad usage, not the current directory or no option."""
    if not text:
        raise argparse.ArgumentTypeError("expected a file name, got an empty string")
    return text


def add_graph_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("graph", metavar="G", type=file_path, help="a graph file (refc-graph/1 JSON) or a corpus case")


def load(args: argparse.Namespace) -> Graph:
    from refcompiler.graph_json import load_graph

    return load_graph(args.graph)


def add_mutant_argument(parser: argparse.ArgumentParser) -> None:
    """``--mutant NAME``: run with a deliberately wrong compiler (``refc mutants`` lists them).
    ``refc.cli.main`` installs it around the command."""
    parser.add_argument("--mutant", metavar="NAME", default=None, help="install a mutant (see `refc mutants`)")


def in_file(path: str, e: InvariantViolation) -> InvariantViolation:
    """``e`` with its message led by the graph file it was found in (``refc run: G:
    after pass P: IR-4: ...``), as ``refc check`` names the file on every line."""
    return e.at(f"{path}: {e.stage}" if e.stage else path)


def size_list(example: str) -> Callable[[str], tuple[int, ...]]:
    """An argparse type: comma-separated sizes of at least 1 (``example`` shows the form)."""

    def parse(text: str) -> tuple[int, ...]:
        values = tuple(whole(x.strip()) for x in text.split(",") if x.strip())
        if any(n is None for n in values):
            raise argparse.ArgumentTypeError(f"expected sizes like {example}, got {text!r}")
        if not values or any(n < 1 for n in values):
            raise argparse.ArgumentTypeError(f"sizes must be whole numbers of at least 1, got {text!r}")
        return values

    parse.__name__ = "size list"
    return parse


def whole(text: str) -> int | None:
    """``text`` as a whole number written in ASCII digits, with a leading minus
    sign or not, else ``None``. (``int`` also takes ``1_0``, `` 3 `` and other
    scripts' digits, ``٣``, and raises past 4300 digits, which a bound then
    refuses by its own message: such a number is returned as one above every bound.)"""
    digits = text.removeprefix("-")
    if not (digits.isascii() and digits.isdigit()):
        return None
    if len(digits) > _MAX_DIGITS:
        return -_HUGE if text.startswith("-") else _HUGE
    return int(text)


_MAX_DIGITS = 4000  # below Python's limit on converting a string to an int (4300 digits)
_HUGE = 10**_MAX_DIGITS


def whole_number(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``minimum`` (and at most
    ``maximum``: a count of repetitions, each of which takes time)."""

    def parse(text: str) -> int:
        value = whole(text)
        if value is None:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {shown(text)}")
        if value < minimum:
            raise argparse.ArgumentTypeError(f"needs {minimum} or more, got {shown(value)}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"needs at most {maximum}, got {shown(value)}")
        return value

    parse.__name__ = f"whole number >= {minimum}"
    return parse


# The longest time limit or budget a flag takes: 2**31 - 1 milliseconds (about 24.8
# days), what poll() and the timers under a time limit hold; past it a plug-in
# replay raised OverflowError and every fuzz chunk failed "outside the oracle".
MAX_SECONDS = (2**31 - 1) // 1000


def positive_seconds(text: str) -> float:
    """An argparse type: a number of seconds above 0 and at most ``MAX_SECONDS``."""
    return _seconds(text, zero=False)


def seconds(text: str) -> float:
    """An argparse type: a number of seconds, 0 or more, at most ``MAX_SECONDS``."""
    return _seconds(text, zero=True)


def _seconds(text: str, *, zero: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (0 <= value if zero else 0 < value) or value == math.inf:
        raise argparse.ArgumentTypeError(f"needs a finite number of seconds {'of 0 or more' if zero else 'above 0'}, got {text}")
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"needs at most {MAX_SECONDS} seconds (about 24 days), got {text}")
    return value


def plural(n: int, what: str) -> str:
    """``1 node``, ``2 nodes``."""
    return f"{n} {what}" + ("" if n == 1 else "s")


def node_order(text: str) -> tuple[str, ...]:
    """An argparse type: ``--order a,b,c``, node names separated by commas."""
    names = tuple(n.strip() for n in text.split(","))
    if not names or any(not n for n in names):
        raise argparse.ArgumentTypeError(f"expected node names separated by commas, got {text!r}")
    return names


def add_compile_arguments(parser: argparse.ArgumentParser, *, from_case: bool = False) -> None:
    """``--scheduler``/``--schedule``, ``--seed``, ``--pipeline``: shared by
    ``refc compile``, ``refc run`` and ``refc validate``. With ``from_case``
    (compile, run) they default to what a corpus case records (``refc.cli.settings``),
    and ``--order``, ``--allow-plugin`` and ``--no-mutant`` are added."""
    known = ", ".join(BUILT_IN_SCHEDULERS)
    recorded = "the case's, else " if from_case else ""
    parser.add_argument(
        "--scheduler",
        "--schedule",
        dest="scheduler",
        metavar="NAME",
        default=None if from_case else "topo",
        help=f"scheduler: {known}, or module:attribute for your own (default {recorded}topo)",
    )
    parser.add_argument("--seed", type=whole_number(0), default=None if from_case else 0, metavar="N",
                        help=f"seed of the scheduler (default {recorded}0)")
    parser.add_argument(
        "--pipeline",
        metavar="P",
        default=None if from_case else "O0",
        help=f"IR passes: O0 (none), O2 (all), a comma-separated list of pass names, or module:attribute (default {recorded}O0)",
    )
    if not from_case:
        return
    parser.add_argument("--order", type=node_order, default=None, metavar="A,B,...",
                        help="an explicit node order (every node once, respecting every dependency) instead of a scheduler's")
    parser.add_argument("--allow-plugin", dest="allow", action="append", default=[], metavar="MODULE",
                        help="let a corpus case import MODULE (its module:attribute scheduler or pipeline); repeatable")
    parser.add_argument("--no-mutant", action="store_true", help="compile with the correct compiler even if the case names a mutant")


def out_dir(path: str) -> None:
    """``--out DIR``, checked before any work: a directory refc can write in
    (not a dangling link, a file, under a file, or read-only); else ``UsageError`` (exit 2)."""
    try:
        check_writable_dir(path)
    except OSError as e:
        raise UsageError(f"--out {path}: cannot write there: {e.strerror or e}") from None


def out_file(path: str, *, reads: Iterable[str] = ()) -> None:
    """``--out FILE`` or ``-o FILE``, checked before any work (see ``out_dir``;
    ``/dev/null`` is fine), and never one of the files ``reads`` (the command's
    inputs: see ``not_an_input``)."""
    try:
        check_writable_file(path)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None
    for source in reads:
        not_an_input(path, source, "give another file")


def not_an_input(path: str, source: str, hint: str) -> None:
    """Raise ``UsageError`` when the file a command is to write, ``path``, is
    the file ``source`` it reads, by any name or link: the output would replace
    the input (``refc show g.json --format dot -o g.json`` left a picture
    where the graph was). A device or pipe (``/dev/null``) is written into, not
    replaced, so it may be both."""
    try:
        same = os.path.isfile(path) and os.path.samefile(path, source)
    except OSError:  # the output does not exist yet (or the input is gone: reading it says so)
        same = False
    if same:
        raise UsageError(f"{path}: the output would overwrite the input {source}; {hint}")


def derived_out(source: str, out: str | None, suffix: str) -> str:
    """The file a converting command writes, found before any work: ``out``
    (``-o``), else ``source`` with ``suffix``; never ``source`` itself, by any
    name or link (a model named ``m.json`` imported, a graph named ``g.onnx``
    exported: the default would overwrite the input)."""
    path = out or str(Path(source).with_suffix(suffix))
    not_an_input(path, source, "give -o another file" if out is None else "-o names the input")
    return path


@contextlib.contextmanager
def locked_out(path: str) -> Iterator[None]:
    """Hold ``path/.lock`` for the block; a second campaign into ``path`` is a ``UsageError``."""
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(locked_dir(path))
        except OSError as e:
            raise UsageError(f"--out {path}: {e.strerror or e}") from None
        yield


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def worker_count(asked: int | None, *, force: bool = False) -> int | None:
    """``--workers``: at most ``cores()`` unless ``force`` (``--force-workers``)."""
    if asked is not None and asked > cores() and not force:
        raise UsageError(f"--workers {asked}: only {cores()} cores are available (--force-workers to run more anyway)")
    return asked


def verdict_exit(verdict: Verdict) -> int:
    """The exit code of ``refc prove`` and ``refc validate`` for a verdict:
    0 proved, 1 a counterexample, 3 inconclusive (never reported as proved)."""
    from refcompiler.proofs import Verdict

    return {Verdict.PROVED: 0, Verdict.COUNTEREXAMPLE: 1, Verdict.INCONCLUSIVE: 3}[verdict]
