"""IR passes (DESIGN §5): the registry, the named pipelines and the runner.

A pass is a function ``Program -> Program`` that returns a new, valid program.
Each built-in pass is one module of this package defining one function of the
module's name (``refcompiler.passes.share_buffers.share_buffers``). A pipeline
is a list of ``(name, pass)``; ``run_pipeline`` verifies the IR after lowering
and after every pass, so a pass that breaks an invariant is named in the error.

A user's passes plug in with the same protocol: ``resolve_pipeline`` accepts a
comma-separated list whose items are ``O0``, ``O2``, pass names or
``module:attribute`` (a list of passes or names, a single pass, or a function
of no arguments returning such a list), or a sequence of names and pass
functions.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import inspect
from dataclasses import fields as dataclass_fields
from dataclasses import replace
from typing import Callable, Iterator, Sequence

from specs import OpKind, TensorType

from refcompiler import memos
from refcompiler.errors import ExecutionError, InvariantViolation, UsageError
from refcompiler.ir import Buffer, IdentityTable, Instr, Opcode, Operand, OperandKind, Program, identity_key
from refcompiler.ir_verifier import program_violations, verdict_context
from refcompiler.limits import shown
from refcompiler.plugins import call_untrusted, load_attribute, qualified_name

__all__ = ["Pass", "PASSES", "PIPELINES", "built_in", "reproducible", "resolve_pipeline", "run_pipeline", "watching"]

Pass = Callable[[Program], Program]

_NAMES = (
    "share_buffers",
    "eliminate_copies",
    "hoist_dealloc",
    "sink_alloc",
    "dead_store_elimination",
    "delete_dead_allocs",
)

# Each module is imported by name so that ``refcompiler.passes.<name>`` stays
# the module (importing the function into this namespace would shadow it).
PASSES: dict[str, Pass] = {
    name: getattr(importlib.import_module(f"{__name__}.{name}"), name) for name in _NAMES
}

PIPELINES: dict[str, tuple[str, ...]] = {
    "O0": (),
    # Dead code first, so that fewer readers block the rewrites; copies before
    # sharing, since a producer shared in place can no longer write straight
    # into its placeholder; allocs and deallocs tightened last.
    "O2": (
        "dead_store_elimination",
        "delete_dead_allocs",
        "eliminate_copies",
        "share_buffers",
        "sink_alloc",
        "hoist_dealloc",
    ),
}


_BUILT_IN = frozenset(PASSES.values())


def built_in(passes: Sequence[tuple[str, Pass]]) -> bool:
    """Whether every pass of a resolved pipeline is one of ``PASSES``: then a
    program's compilation is a deterministic function of the graph, the order,
    the passes and the swap points installed (a user's pass need not be)."""
    return all(run in _BUILT_IN for _, run in passes)


def reproducible(pipeline: str | Sequence) -> bool:
    """``built_in`` for a pipeline spec: compiling one order of one graph
    under it always gives an equal program. ``False`` for a pipeline that
    does not resolve."""
    try:
        return built_in(resolve_pipeline(pipeline))
    except Exception:  # a user's pipeline that fails to load: it is not compiled either
        return False


def _known() -> str:
    return f"pipelines {', '.join(PIPELINES)}; passes {', '.join(PASSES)}; or module:attribute"


def _by_name(name: str) -> tuple[str, Pass]:
    if name not in PASSES:
        raise UsageError(f"unknown pass {shown(name)} (known: {_known()})")
    return name, PASSES[name]


def _takes_no_arguments(fn: Callable[..., object]) -> bool:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # some builtins have no signature: treat as a pass
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters)


def _from_object(value: object, origin: str, *, made: bool = False) -> list[tuple[str, Pass]]:
    """A user's pipeline object: a string, a list of passes or names, a single
    pass, or a function of no arguments returning one of those (``made``: what
    such a function returned, which may not be another such function)."""
    if isinstance(value, str):
        return resolve_pipeline(value)
    if callable(value):
        if _takes_no_arguments(value):
            if made:
                raise UsageError(f"pipeline {origin}: its function returned another function of no arguments, not passes")
            return _from_object(call_untrusted(value, f"pipeline {origin}"), origin, made=True)
        return _elements(value, origin)
    if isinstance(value, (list, tuple)):
        return [p for v in value for p in _elements(v, origin)]
    raise UsageError(f"pipeline {origin}: expected a list of passes or pass names, got {type(value).__name__}")


def _elements(value: object, origin: str) -> list[tuple[str, Pass]]:
    """One item of a pipeline list: a pass, a pass name, a pipeline name (its
    passes: ``["O2", my_pass]`` is O2 then the user's pass) or ``module:attr`` of a pass."""
    if isinstance(value, str):
        if ":" in value:
            loaded = load_attribute(value, "pipeline")
            if not callable(loaded):
                raise UsageError(f"pipeline {origin}: {value} is not a pass")
            return [(_name_of(loaded), loaded)]  # type: ignore[arg-type]
        if value.strip() in PIPELINES:
            return [_by_name(name) for name in PIPELINES[value.strip()]]
        return [_by_name(value.strip())]
    if callable(value):
        return [(_name_of(value), value)]  # type: ignore[list-item]
    raise UsageError(f"pipeline {origin}: {value!r} is neither a pass nor a pass name")


def _name_of(run: Callable[..., object]) -> str:
    """A pass function's name: a built-in pass's name (``share_buffers``); a
    user's ``module.qualname`` (``my_passes.share_buffers``,
    ``my_passes.Fold.apply``), so that a finding blaming it, or
    ``--print-after``, never names refc's own pass, and two users' passes of
    one name (``a.run``, ``b.run``) are told apart. A callable object with no
    ``__qualname__``: its class's."""
    for name, known in PASSES.items():
        if known is run:
            return name
    return qualified_name(run, ".")


# What a string of built-in names resolved to (``resolve_pipeline``), by the
# string: ``PIPELINES`` and ``PASSES`` are fixed tables, so it resolves alike
# every time (the swap points a mutant installs are inside the passes, not
# these). Bounded (cleared when full).
_RESOLVED: dict[str, tuple[tuple[str, Pass], ...]] = {}
_RESOLVED_SIZE = 64


def resolve_pipeline(spec: str | Sequence[str | Pass]) -> list[tuple[str, Pass]]:
    """The passes ``spec`` names, as ``(name, pass)`` in order (a new list).

    ``spec``: a string of comma-separated items, each a pipeline name (``O0``,
    ``O2``), a pass name or ``module:attribute``; or a sequence of pipeline
    names, pass names and pass functions. Raises ``UsageError`` listing what is known when a name
    is unknown. A string of built-in names is resolved once, on its first
    call (a compilation resolves its pipeline every time); one with a
    ``module:attribute`` item is loaded on every call.
    """
    if isinstance(spec, str):
        found = _RESOLVED.get(spec)
        if found is not None:
            return list(found)
        out = _resolve_string(spec)
        if ":" not in spec:
            if len(_RESOLVED) >= _RESOLVED_SIZE:
                _RESOLVED.clear()
            _RESOLVED[spec] = tuple(out)
        return out
    if isinstance(spec, Sequence):
        return [p for v in spec for p in _elements(v, repr(spec))]
    return _from_object(spec, repr(spec))


def _resolve_string(spec: str) -> list[tuple[str, Pass]]:
    """``resolve_pipeline`` for a string, resolved now."""
    items = [item.strip() for item in spec.split(",")]
    if any(not item for item in items):
        raise UsageError(f"pipeline {spec!r}: empty pass name (known: {_known()})")
    out: list[tuple[str, Pass]] = []
    for item in items:
        if item in PIPELINES:
            out.extend(_by_name(name) for name in PIPELINES[item])
        elif ":" in item:
            out.extend(_from_object(load_attribute(item, "pipeline"), repr(item)))
        else:
            out.append(_by_name(item))
    return out


# Callbacks shown each program ``run_pipeline`` makes (``watching``); none in a campaign.
_WATCHERS: list[Callable[[str, Program], None]] = []


@contextlib.contextmanager
def watching(callback: Callable[[str, Program], None]) -> Iterator[None]:
    """Within the block, ``callback(stage, program)`` is called with the
    program as lowered (``stage`` "lowering") and as each pass returned it
    (the pass's name), before it is verified: ``refc compile
    --print-after``. A program a compilation finds remembered (the same
    order under the same passes, with the same ``prepare``) is not shown
    again."""
    _WATCHERS.append(callback)
    try:
        yield
    finally:
        _WATCHERS.remove(callback)


def _show(stage: str, program: Program) -> None:
    for callback in list(_WATCHERS):
        callback(stage, program)


def _verified(program: Program, stage: str, context: tuple[object, tuple[int, ...]]) -> None:
    found = program_violations(program, context)
    if found:
        fault = found[0].at(stage)
        fault.program = program
        raise fault


def _how_changed(name: str, old: dict[str, Buffer], new: dict[str, object]) -> str:
    """What became of module buffer ``name``: `` (gone)``, `` (new)`` (a
    buffer renamed is one of each), else nothing: its fields changed."""
    if name not in new:
        return " (gone)"
    return " (new)" if name not in old else ""


def _kept_interface(before: Program, after: Program, name: str) -> Program:
    """``after``, what a user's pass returned for ``before``, held to what the
    IR can hold (``_malformed_program``; IR-1) and to the graph's interface:
    IR-1 if it changed the module buffers, IR-4 if it changed the saves (the
    verifier after the pass checks the instructions against both, so no pass
    may change them). Lists where the IR has tuples become tuples."""
    bad = _malformed_program(after)
    if bad:
        _raise_at(None, name, "IR-1", f"the pass returned a program whose {bad}")
    if not _equal(tuple(after.buffers), before.buffers):
        old = before.buffer_by_name
        new = {b.name if isinstance(b, Buffer) else repr(b): b for b in after.buffers}
        changed = sorted(n for n in old.keys() | new.keys() if not _equal(old.get(n), new.get(n))) or sorted(old)
        said = ", ".join(f"{shown(n)}{_how_changed(n, old, new)}" for n in changed[:5])
        _raise_at(after, name, "IR-1", f"the pass changed module buffer(s) {said}: the module buffers are the graph's storage, which no pass may change")
    if not _equal(tuple(after.saves), before.saves):
        _raise_at(after, name, "IR-4", "the pass changed the program's saves: they record the graph's saves (who may write each placeholder), which no pass may change")
    if any(type(getattr(after, f)) is not tuple for f in ("instrs", "buffers", "saves", "schedule", "offsets")) or \
            not all(type(o) is tuple for o in after.offsets):
        after = replace(after, instrs=tuple(after.instrs), buffers=before.buffers, saves=before.saves,
                        schedule=tuple(after.schedule), offsets=tuple(tuple(o) for o in after.offsets))
    return after


def _equal(a: object, b: object) -> bool:
    """``a == b`` for values a user's pass returned, whose ``==`` may raise."""
    try:
        return bool(a == b)
    except Exception:
        return False


def _malformed_program(program: Program) -> str:
    """What in a program a user's pass returned is of no type the IR holds
    (``_malformed`` for its instructions), or empty."""
    for field in ("instrs", "buffers", "saves", "schedule", "offsets"):
        if not isinstance(getattr(program, field), (tuple, list)):
            return f"{field} is {type(getattr(program, field)).__name__}, not a tuple"
    bad = _malformed(program.instrs)
    if bad:
        return bad
    fields = (
        (isinstance(program.name, str), "name", "a str"),
        (all(isinstance(n, str) for n in program.schedule), "schedule", "a tuple of node names"),
        (all(isinstance(o, (tuple, list)) and len(o) == 2 and isinstance(o[0], str) and type(o[1]) is int for o in program.offsets),
         "offsets", "a tuple of (activation, byte offset) pairs"),
        (program.peak_bytes is None or type(program.peak_bytes) is int, "peak_bytes", "None or a whole number"),
    )
    for ok, field, want in fields:
        if not ok:
            return f"{field} {shown(getattr(program, field))} is not {want}"
    return ""


def _malformed(instrs: Sequence[object]) -> str:
    """Why an instruction of a user's pass is not one the IR can hold (each
    field of ``Instr`` and ``Operand`` of its type), or empty: what the
    verifier, the printer and the interpreters may take for granted."""
    for k, instr in enumerate(instrs):
        if not isinstance(instr, Instr):
            return f"instruction {k} is {type(instr).__name__} {shown(instr)}, not an Instr"
        checks = (
            (isinstance(instr.opcode, Opcode), "opcode", "an Opcode"),
            (isinstance(instr.name, str), "name", "a str"),
            (instr.op is None or isinstance(instr.op, OpKind), "op", "an OpKind or None"),
            (instr.type is None or isinstance(instr.type, TensorType), "type", "a TensorType or None"),
            (isinstance(instr.operands, tuple) and all(isinstance(o, Operand) and isinstance(o.kind, OperandKind)
                                                       and isinstance(o.name, str) for o in instr.operands),
             "operands", "a tuple of Operand(OperandKind, str)"),
            (isinstance(instr.attrs, tuple) and all(isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], str) and _plain(a[1])
                                                    for a in instr.attrs),
             "attrs", "a tuple of (name, value) pairs, each value None, a bool, int, float, str or a tuple of them"),
        )
        for ok, field, want in checks:
            if not ok:
                return f"instruction {k} ({shown(getattr(instr, 'name', None))}) has {field} {shown(getattr(instr, field))}, not {want}"
    return ""


def _plain(value: object, depth: int = 0) -> bool:
    """An attribute value the IR's text form can print (as the attributes of a
    graph's nodes are: JSON scalars and lists, as tuples)."""
    if value is None or type(value) in (bool, int, float, str):
        return True
    return type(value) is tuple and depth < 8 and all(_plain(v, depth + 1) for v in value)


def _raise_at(program: Program | None, name: str, invariant: str, message: str) -> None:
    """Raise the violation found after pass ``name``, with ``program`` to draw
    (``None``: one the IR cannot hold, which cannot be drawn)."""
    fault = InvariantViolation(invariant, message, stage=f"after pass {name}")
    fault.program = program
    raise fault


def _apply(name: str, run: Pass, program: Program, context: object) -> object:
    """Run one pass; a user's pass that raises is a finding about it (exit 1),
    not a bug in refc. The built-in passes are trusted to raise only refc errors
    (``_run_built_in``).

    A user's pass is given its own copy of the program: the instruction
    objects are shared with the lowering and the other orders of the graph
    (``Lowering``, ``identity_key``), and one changed in place (through
    ``object.__setattr__``) would break the programs that share it, to be
    blamed on lowering. A pass that changed its copy is a finding about it."""
    if run in _BUILT_IN:
        return _run_built_in(run, program, context)
    given = copy.deepcopy(program)  # fields only (``Program.__getstate__``): nothing of refc's tables
    result = call_untrusted(run, f"pass {name}", given, blame=name)
    if given != program or given.passes != program.passes:
        raise ExecutionError(
            f"pass {name} changed the program it was given ({_first_change(program, given)}): a pass returns a "
            "new Program and leaves its input as it is (the IR is immutable)",
            component=name,
        )
    return program if result is given else result  # unchanged: the program refc verified already


def _first_change(before: Program, after: Program) -> str:
    """Where ``after`` first differs from ``before``, for a message."""
    from refcompiler.ir_text import format_instr

    if len(before.instrs) != len(after.instrs):
        return f"{len(before.instrs)} instructions became {len(after.instrs)}"
    for k, (old, new) in enumerate(zip(before.instrs, after.instrs)):
        if old != new:
            try:
                now = f"`{format_instr(new)}`"
            except Exception:  # noqa: BLE001  # fields the text form cannot print: shown as they are
                now = shown(new)
            return f"instruction {k} `{format_instr(old)}` became {now}"
    changed = [f.name for f in dataclass_fields(Program) if getattr(before, f.name) != getattr(after, f.name)]
    return f"its {changed[0] if changed else 'fields'} changed"


# What built-in passes gave recently, by pass and input (``identity_key``), under
# the context they ran in (``verdict_context``: its swap table).
_RESULTS = memos.kept(IdentityTable(128))


def _run_built_in(run: Pass, program: Program, context: object) -> Program:
    """``run(program)``, or what it gave for a program holding the same objects
    (``identity_key``: another order of the graph that compiled alike so far)
    under the same swap points. A built-in pass is a deterministic function of
    the program and the swap points that reads neither its ``schedule`` nor its
    ``passes`` and hands both on: so it gives that result with this program's
    (its input itself when it gave its input)."""
    key = identity_key(program)
    if key is None:
        return run(program)
    key = (run, key)
    found = _RESULTS.get(key, context)
    if found is not None:
        source, result = found
        if result is source:
            return program
        return result.with_schedule(program.schedule, program.passes)  # type: ignore[attr-defined]  # a Program
    result = run(program)
    _RESULTS.put(key, context, program, result)
    return result


def run_pipeline(program: Program, passes: list[tuple[str, Pass]]) -> Program:
    """Run ``passes`` in order, verifying the program first (as lowered) and after
    every pass. A violation is raised with its stage: ``after lowering`` or
    ``after pass NAME``. The names of the passes run are appended to
    ``program.passes``.

    The built-in passes never read ``passes`` (nor does the verifier), and
    return their input's: so the names of a run of them are recorded once, in
    one copy after the last (or before a user's pass, which sees them all),
    not in a copy of the program after each."""
    if _WATCHERS:
        _show("lowering", program)
    context = verdict_context()  # the swap table and limits, the same for every pass
    _verified(program, "after lowering", context)
    unrecorded: tuple[str, ...] = ()  # built-in passes run since ``program.passes`` was last brought up to date
    for name, run in passes:
        trusted = run in _BUILT_IN
        if unrecorded and not trusted:
            program, unrecorded = program.with_passes((*program.passes, *unrecorded)), ()
        result = _apply(name, run, program, context)
        if not isinstance(result, Program):
            raise ExecutionError(f"pass {name} returned {type(result).__name__}, not a Program", component=name)
        if _WATCHERS:
            _show(name, result)
        if not trusted:
            result = _kept_interface(program, result, name)
        if trusted and type(result) is Program:
            program, unrecorded = result, (*unrecorded, name)
        else:
            program, unrecorded = result.with_passes((*program.passes, *unrecorded, name)), ()
        _verified(program, f"after pass {name}", context)
    return program.with_passes((*program.passes, *unrecorded)) if unrecorded else program
