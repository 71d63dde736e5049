"""The ``refc`` command line: one entry point, one module per command.

Each command module defines ``register(subparsers)``, which adds its parser and
sets ``func`` to a function ``(args) -> int``, its ``run``. Every start builds
every command's parser (``refc --help`` lists them all), so a command module
imports at its top nothing that loads numpy, networkx, jsonschema, Z3, rich or
Hypothesis: the standard library, light modules (``refcompiler.errors``,
``files``, ``pictures.render``, ``onnx_io``) and the helpers here but
``tables``. ``run``, and the functions it calls, import the modules that do the
work where they use them. Then ``refc --help`` and a usage error load none of
those, and ``refc check`` only what checking a graph needs
(tests/cli/test_startup.py). Exit codes (DESIGN §10): 0 ok,
1 a finding, 2 bad usage or malformed input, 3 inconclusive, 4 an internal
error. A ``RefCompilerError`` becomes one message on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import signal
import sys
import traceback
from typing import NoReturn, Sequence

from refcompiler.errors import LimitExceeded, RefCompilerError

__all__ = ["main", "entry", "COMMANDS"]

# Command modules under refc.cli, in the order ``refc --help`` lists them.
COMMANDS = ("check", "show", "run", "compile", "mutants", "fuzz", "replay", "report", "prove", "validate", "bench", "import", "export")
# A command whose module is not named after it (``import`` is a Python keyword).
_MODULES = {"import": "import_onnx", "export": "export_onnx"}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 on bad usage, as we want
        self.print_usage(sys.stderr)
        self.exit(2, f"refc: error: {message}\n")


class _Version(argparse.Action):
    """``--version``, as argparse's own but looked up only when asked: reading the
    installed metadata (``importlib.metadata``) takes about 40 ms, which every
    other command would pay for nothing."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, default: str = argparse.SUPPRESS,
                 help: str = "show program's version number and exit"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object, option_string: str | None = None) -> None:
        print(f"refc {_version()}")
        parser.exit()


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("refc")
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="refc", description="A reference compiler for tensor graphs with owned variables.")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in COMMANDS:
        importlib.import_module(f"refc.cli.{_MODULES.get(name, name)}").register(sub)
    return parser


def _located(e: RefCompilerError, args: argparse.Namespace) -> str:
    """``e``'s message, led by the graph file the command read when ``e`` is a
    limit found in the loaded graph (by shape inference), which names only the node."""
    graph = getattr(args, "graph", None)
    if isinstance(e, LimitExceeded) and e.path is None and isinstance(graph, str):
        return f"{graph}: {e}"
    return str(e)


def _stdout_keeps_file_names() -> None:
    """A file name that is not UTF-8 reaches refc as lone surrogates (``os.fsdecode``);
    printed to a strict stdout (a UTF-8 locale's) it raised UnicodeEncodeError, exit 4.
    Such a name is written back as the bytes it was, as stderr already escapes it."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None and getattr(sys.stdout, "errors", None) == "strict":
        reconfigure(errors="surrogateescape")


def _closed_streams_discard() -> None:
    """A stream closed when refc started (``refc compile G >&-``) is ``None`` in
    Python, and the first write to it an AttributeError (exit 4): what would
    go there goes nowhere instead, as to ``/dev/null``; the exit code still says."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))


def main(argv: Sequence[str] | None = None) -> int:
    _closed_streams_discard()
    _stdout_keeps_file_names()
    try:  # building the parsers imports every command's module: Ctrl-C lands here in the first moments
        from refcompiler.mutants import activate
        from refcompiler.plugins import signals_seen

        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:
        print("refc: interrupted", file=sys.stderr)
        return 130
    with signals_seen() as seen:
        try:
            with activate(getattr(args, "mutant", None)):
                return int(args.func(args))
        except RefCompilerError as e:
            print(f"refc {args.command}: {_located(e, args)}", file=sys.stderr)
            return e.exit_code
        except KeyboardInterrupt:
            print("refc: interrupted", file=sys.stderr)
            return 130
        except BrokenPipeError:
            return 0
        except OSError as e:
            if e.errno not in _CANNOT_WRITE:
                return _internal(args, seen)
            # a full disk or stdout, a quota: the machine's state, not a finding or a bug of refc's
            _drop_stdout()
            print(f"refc {args.command}: cannot write its output: {e.strerror or e}", file=sys.stderr)
            return 2
        except Exception:
            return _internal(args, seen)


def entry() -> NoReturn:
    """The ``refc`` program (the console script; ``python -m refc``): ``main``,
    then exit with its code. Once ``main`` has returned, its outputs are
    written and its code is decided, so SIGINT is ignored from then on: a
    Ctrl-C landing in the interpreter's shutdown ended the process by the
    signal, without a word or an exit code. One landing before ``main``
    returned and after its own handler is exit 130, as there."""
    code = None
    try:
        code = main()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if code is None:
            print("refc: interrupted", file=sys.stderr)
            code = 130
    forget_interrupts()
    sys.exit(code)


def forget_interrupts() -> None:
    """CPython (3.11, 3.12) remembers a KeyboardInterrupt that ended the code
    of a string ``exec`` (as ``dataclasses`` and ``namedtuple`` make methods:
    a Ctrl-C while refc's modules load lands there) even when a caller caught
    it, and ``python -m refc`` then ends by SIGINT, not with ``main``'s 130.
    Each string ``exec`` starts by forgetting it."""
    exec("")


_CANNOT_WRITE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def _internal(args: argparse.Namespace, signals: list[int]) -> int:
    """Not a user's mistake but a bug in refc: the traceback, exit 4 (never 1, a
    finding); unless a signal came (``signals``, those whose handler ran): then a
    library turned the KeyboardInterrupt into an error of its own (numpy, loading,
    says its C extensions failed to import), and the command was interrupted."""
    if signals:
        print("refc: interrupted", file=sys.stderr)
        return 130
    traceback.print_exc()
    print(f"refc {args.command}: internal error (a bug in refc; the traceback above is for its report)", file=sys.stderr)
    return 4


def _drop_stdout() -> None:
    """Stop writing to a stdout that failed: what is still buffered would fail
    again when the interpreter flushes it on exit, with a message of its own."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # a stdout without a file descriptor (a test's capture)
        pass


if __name__ == "__main__":
    sys.exit(main())
