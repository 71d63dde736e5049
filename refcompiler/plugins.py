"""A user's code: loading it as ``module:attribute`` (a scheduler, a pipeline)
and calling it as untrusted code."""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
import sysconfig
import threading
import time
import traceback
from typing import Callable, Iterator

from refcompiler.errors import ExecutionError, RefCompilerError, UsageError
from refcompiler.limits import clipped

__all__ = ["load_attribute", "call_untrusted", "untrusted_calls", "seconds_in_plugins", "signals_seen", "qualified_name"]

# wall-clock seconds this process has spent in users' code called through ``_call``
_SPENT = [0.0]


def seconds_in_plugins() -> float:
    """The seconds this process has spent so far in users' schedulers and
    passes called through ``call_untrusted``/``untrusted_calls``: a campaign
    takes them out of the oracle stage they ran in and shows them apart
    (``seconds_by_stage``'s ``plug-ins``), so that a slow pass of the user's is
    not read as refc's compile stage being slow."""
    return _SPENT[0]


def qualified_name(code: object, sep: str) -> str:
    """A user's function as findings name it: ``module``, ``sep``, ``qualname``
    (``my_sched:schedule``, ``my_passes.Fold.apply``); an object called
    through ``__call__``, which has no ``__qualname__``: its class's."""
    named = code if hasattr(code, "__qualname__") else type(code)
    return f"{getattr(named, '__module__', None) or '?'}{sep}{named.__qualname__}"


def load_attribute(spec: str, what: str) -> object:
    """The object ``spec`` (``module:attribute``) names; ``UsageError`` naming
    ``what`` (e.g. "scheduler") when it cannot be imported or found."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise UsageError(f"{what} {spec!r}: expected module:attribute")
    try:
        with _guarded(f"{what} {spec!r}: importing module {module_name!r}"):
            module = _import(module_name)
    except RefCompilerError as e:
        raise UsageError(str(e)) from None
    except ImportError as e:
        raise UsageError(f"{what} {spec!r}: cannot import module {module_name!r} ({e})") from None
    except SyntaxError as e:
        raise UsageError(f"{what} {spec!r}: module {module_name!r} has a syntax error ({e.filename}:{e.lineno}: {e.msg})") from None
    except SystemExit as e:
        raise UsageError(f"{what} {spec!r}: module {module_name!r} called sys.exit({e.code!r}) while being imported") from None
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # BaseException too: a user's module is not refc's bug
        if _refcs_own(e):  # a case's time limit that fired during a slow import goes on up
            raise
        raise UsageError(f"{what} {spec!r}: importing module {module_name!r} raised {type(e).__name__}: {_short(e)}{_where(e)}") from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise UsageError(f"{what} {spec!r}: module {module_name!r} has no attribute {attribute!r}") from None
    except Exception as e:  # a module ``__getattr__`` of the user's that raises
        raise UsageError(f"{what} {spec!r}: looking up {attribute!r} raised {type(e).__name__}: {_short(e)}") from None


def _short(e: BaseException) -> str:
    """``e``'s message on one line, cut short; a message that cannot be made
    (a user's ``__str__`` that raises) is said so."""
    try:
        text = " ".join(str(e).split())
    except Exception:
        return "(its message could not be read)"
    return text if len(text) <= 200 else text[:197] + "..."


class _Exited(BaseException):
    """Raised in place of ``os._exit`` while a user's code runs."""

    def __init__(self, code: object):
        super().__init__(code)
        self.code = code


@contextlib.contextmanager
def _guarded(what: str, blame: str = "") -> Iterator[list[int]]:
    """Run a block of a user's code: what it prints goes to stderr (stdout may
    carry refc's own output, e.g. ``refc run --out -``), and ``os._exit``
    raises instead of ending refc with no word; only in the thread that runs it
    (another thread's ``os._exit``, or a child's the code forked, is untouched).
    A ``KeyboardInterrupt`` out of the block is an interrupt only when a signal
    handler ran meanwhile (``signals_seen``, the list yielded); one the code
    raised itself is a finding about it, like any other exception."""
    caller = threading.get_ident(), os.getpid()
    real_exit = os._exit

    def refused_exit(code: int) -> None:
        if (threading.get_ident(), os.getpid()) != caller:
            real_exit(code)
        raise _Exited(code)

    os._exit = refused_exit  # type: ignore[assignment]
    try:
        with signals_seen() as seen, contextlib.redirect_stdout(sys.stderr):
            try:
                yield seen
            except KeyboardInterrupt as e:
                if seen or _refcs_own(e):
                    raise
                raise _interrupt_error(what, e, blame) from None
    except _Exited as e:
        raise _exit_error(what, e, blame) from None
    finally:
        os._exit = real_exit


def _interrupt_error(what: str, e: KeyboardInterrupt, blame: str) -> ExecutionError:
    """A ``KeyboardInterrupt`` the user's code raised itself (no signal came)."""
    said = _short(e)
    return ExecutionError(f"{what} raised KeyboardInterrupt" + (f": {said}" if said else ""), component=blame)


def _exit_error(what: str, e: _Exited, blame: str) -> ExecutionError:
    return ExecutionError(f"{what} called os._exit({e.code!r})", component=blame)


@contextlib.contextmanager
def signals_seen() -> Iterator[list[int]]:
    """A list that gets the number of each SIGINT or SIGTERM whose Python
    handler runs inside the block (the handler in place is still called, and
    restored at the end). Handlers run only in the main thread, so in any
    other thread the list stays empty: no signal can interrupt there."""
    seen: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return
    saved = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if callable(handler):  # SIG_IGN, SIG_DFL: no Python code runs, nothing raises
            saved[sig] = handler
            signal.signal(sig, _noting(seen, handler))
    try:
        yield seen
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def _noting(seen: list[int], handler: Callable[[int, object], object]) -> Callable[[int, object], object]:
    def noted(signum: int, frame: object) -> object:
        seen.append(signum)
        return handler(signum, frame)

    return noted


def _import(module_name: str) -> object:
    """Import a user's module: from ``sys.path``, or else from the current
    directory. The current directory is searched last and only for this
    module, so that a ``fuzz.py`` or ``specs.py`` there never shadows refc's own."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        top = module_name.partition(".")[0]
        if e.name != top or os.getcwd() in sys.path:
            raise
    cwd = os.getcwd()
    sys.path.append(cwd)
    try:
        return importlib.import_module(module_name)
    finally:
        sys.path.remove(cwd)


def call_untrusted(fn: Callable[..., object], what: str, *args: object, blame: str = "") -> object:
    """``fn(*args)``, where ``fn`` is a user's code described by ``what`` (e.g.
    "the scheduler my_sched.schedule", "pass my_pass"). An exception it raises is
    a finding about it (``ExecutionError``, exit 1, whose ``component`` is
    ``blame``: the component of the compiler it is, e.g. the pass's name), not a
    bug in refc; a ``RefCompilerError`` passes through as it is."""
    with untrusted_calls(what, blame) as call:
        return call(fn, *args)


@contextlib.contextmanager
def untrusted_calls(what: str, blame: str = "") -> Iterator[Callable[..., object]]:
    """A block that calls a user's code many times (a scheduler asked for
    hundreds of seeds): ``call(fn, *args)`` is ``call_untrusted(fn, what,
    *args)``, with the guards of ``_guarded`` set up once for the block
    instead of at every call (swapping the signal handlers costs ~40 us)."""
    with _guarded(what, blame) as seen:
        yield lambda fn, *args: _call(what, blame, seen, fn, args)


def _call(what: str, blame: str, seen: list[int], fn: Callable[..., object], args: tuple[object, ...]) -> object:
    start = time.perf_counter()
    try:
        return fn(*args)
    except RefCompilerError:
        raise
    except _Exited as e:
        raise _exit_error(what, e, blame) from None
    except KeyboardInterrupt as e:
        if seen or _refcs_own(e):  # an interrupt: a signal handler ran during the block
            raise
        raise _interrupt_error(what, e, blame) from None
    except SystemExit as e:  # a user's sys.exit must not end refc (or a campaign)
        raise ExecutionError(f"{what} called sys.exit({e.code!r})", component=blame) from None
    except BaseException as e:  # BaseException too: a user's odd exception is not refc's bug
        if _refcs_own(e):  # a deadline refc raised into the call (a case's time limit) goes on up
            _note_within(e, what, blame)
            raise
        raise ExecutionError(f"{what} raised {type(e).__name__}: {_short(e)}{_where(e)}", component=blame) from None
    finally:
        _SPENT[0] += time.perf_counter() - start


# refc's own packages: a frame in them is not the user's code
_OURS = tuple(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), p, "") for p in ("refcompiler", "fuzz", "refc", "specs"))
FRAMES_SHOWN = 3


def _where(e: BaseException) -> str:
    """Where in the user's code ``e`` was raised: `` (at FILE:LINE in FUNC, called
    from ...)``, the innermost ``FRAMES_SHOWN`` frames of the user's own code
    (a library's frames only when there are no others; refc's never), so that
    a finding about a plug-in says which line to look at; empty when no frame
    is known."""
    frames = [f for f in traceback.extract_tb(e.__traceback__)[1:] if not f.filename.startswith("<") and not os.path.abspath(f.filename).startswith(_OURS)]
    # the interpreter's library and installed packages: a frame there is a library the user's code called
    libraries = tuple(os.path.join(os.path.abspath(p), "") for p in {sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")})
    own = [f for f in frames if not os.path.abspath(f.filename).startswith(libraries)]
    shown = (own or frames)[-FRAMES_SHOWN:]
    if not shown:
        return ""
    try:
        here = os.path.join(os.getcwd(), "")
    except OSError:  # the current directory is gone: paths as they are
        here = ""

    def place(f: traceback.FrameSummary) -> str:
        path = os.path.abspath(f.filename)
        name = os.path.relpath(path, here) if here and path.startswith(here) else f.filename
        return f"{clipped(name, 200)}:{f.lineno} in {clipped(f.name, 80)}"

    return " (at " + ", called from ".join(place(f) for f in reversed(shown)) + ")"


def _note_within(e: BaseException, what: str, blame: str) -> None:
    """Say on ``e`` (one of refc's own, with a ``within`` slot, such as a
    campaign's ``CaseTimeout``) that it struck in the user's code ``what``
    (with where in it, ``_where``), unless a call nearer to where it struck said so."""
    if hasattr(e, "within") and e.within is None:
        e.within = (f"{what}{_where(e)}", blame)


def _refcs_own(e: BaseException) -> bool:
    """Whether ``e`` is one of refc's own control-flow exceptions (``BaseException``
    subclasses such as a campaign's ``CaseTimeout``), not the user's."""
    return not isinstance(e, Exception) and type(e).__module__.partition(".")[0] in ("refcompiler", "fuzz", "refc")
