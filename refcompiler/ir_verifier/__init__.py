"""The IR verifier: IR-1..IR-6 and MEM-1 (DESIGN §6), checked statically over
the flat instruction list.

``program_violations(program)`` walks the instructions once, in order, and
lists every broken invariant it finds (in instruction order, MEM-1 last);
``verify_program`` raises the first; ``check_mem1`` checks MEM-1 alone. Each violation names the invariant id,
the instruction (index and text) and shows the instructions around it, in the
canonical text form of ``refcompiler.ir_text``.

Checked, per id (a name's *origin* is what its chain of views bottoms out at;
see ``refcompiler.ir_analysis``):

- IR-1: every data operand and view source is a module buffer, an allocated and
  not yet deallocated activation, or a view whose origin is one; names are
  defined before they are used and defined once; each activation is
  ``alloc``-ed once and ``dealloc``-ed once, after its ``alloc``; an
  instruction's operands follow its signature (a kernel: the op's results
  ``@out``, inputs ``@in``, state ``@inout``, in that order; a copy:
  ``@out`` then ``@in`` of one type; a view: one ``@in``, as many bytes).
- IR-2: an ``@in``/``@inout`` operand whose origin is an activation reads it
  only after an earlier instruction wrote it (directly or through a view).
- IR-3: no operand whose origin is a constant is ``@out``/``@inout``.
- IR-4: a placeholder is written only by its save (``program.saves``): the
  ``copy`` named after the save node or, after copy elimination, the
  ``kernel`` named after the producer of the saved value; by one instruction
  at most; the writing instruction does not read it; and no instruction reads
  it (directly or through a view) after a save ``copy`` wrote it. Reads after
  the producer wrote it are allowed: they are reads of the saved value by its
  consumers, renamed by copy elimination (whether that renaming was legal is
  seen only by running the program: the IR does not say which reads meant the
  entry value), but for the copy of a save of a module buffer's value
  (``Save.producer`` None), which reads the entry value: after anything wrote
  the placeholder, that is IR-4.
- IR-5: an owned buffer appears only as an ``@inout`` operand, by its own
  name, of its owner's kernel (``instr.name == buffer.owner``); never as a
  view's source.
- IR-6: no two written operands of one instruction share an origin; a result
  ``@out`` shares an origin with an ``@in`` operand only if the spec's
  in-place list for that result allows that input's position and the two
  have the same type (a copy allows none); a state ``@inout`` never shares an
  origin with an ``@in``.
- MEM-1 (once allocated: ``offsets`` or ``peak_bytes`` set): every
  activation has an offset inside the arena, and two activations live at the
  same time never overlap in bytes. Live ranges are computed here, not by
  the allocator: from ``alloc`` to ``dealloc``, both inclusive, since both
  instructions touch the region (the interpreter poisons it).

A program found valid is remembered: programs are immutable, and the verdict
is a function of the program (``passes``, the names of the passes run, is not
part of it) and of the swap points installed (a mutant may change the spec
table the walk reads) and the limits. The verdict is kept on the program object
itself (with the swap table), so that asking again about the same object costs
nothing, and by the program's ``identity_key`` (a lookup): the walk reads no
``schedule``, so a program holding the same objects as a valid one (a copy
with other passes, or another order that compiled alike) is valid too. So a
pass that returns its input unchanged, or two pipelines sharing one lowered
program, cost one walk, and every check still holds for every program
verified. A plain ``Program`` equal to a valid one but made of other objects is
walked again: the passes hand on their input's objects, and comparing each new
program by value with the recent valid ones cost a campaign more than the walks
it saved. A user's subclass of ``Program`` (no ``identity_key``) is compared by
value with the few most recent valid ones of its kind.

The package: ``walk`` (IR-1..IR-6, one walk over the instructions), ``mem1``
(MEM-1).
"""

from __future__ import annotations

from threading import Lock

from refcompiler import limits, memos, variants
from refcompiler.errors import InvariantViolation
from refcompiler.ir import IdentityTable, Program, identity_key
from refcompiler.ir_verifier.mem1 import check_mem1, mem1_violations
from refcompiler.ir_verifier.walk import Walk

__all__ = ["verify_program", "program_violations", "verdict_context", "check_mem1", "mem1_violations"]


def verify_program(program: Program) -> None:
    """Raise the first violation of IR-1..IR-6 (and MEM-1 when offsets are set)."""
    found = program_violations(program)
    if found:
        raise found[0]


# Programs of a user's subclass of ``Program`` (no ``identity_key``) recently found
# valid, with what they were verified under (``verdict_context``: kept alive here,
# so that its identity stays unique while the entry lives).
_VALID: list[tuple[Program, object]] = []
_VALID_SIZE = 8
_LOCK = Lock()


def _forget() -> None:
    with _LOCK:
        _VALID.clear()


memos.on_forget(_forget)


# What a program object was found valid under, kept on the object
# (``Program`` hands it on to a copy differing only in ``passes``).
_VALID_UNDER = "_valid_under"

_CONTEXT: tuple[object, tuple[int, ...]] = (None, ())


def verdict_context() -> tuple[object, tuple[int, ...]]:
    """What a verdict depends on besides the program: the swap table installed
    and the limits IR-1 bounds allocations by (``refcompiler.limits``, read
    from the environment: elements, bytes). One object while they stay the same, so
    that a verdict is known again by identity. A caller verifying several
    programs under one swap table (``run_pipeline``: after each pass) reads
    it once and passes it on."""
    global _CONTEXT
    swaps, bounds = variants.active(), (limits.value("elements"), limits.value("bytes"))
    if _CONTEXT[0] is not swaps or _CONTEXT[1] != bounds:
        _CONTEXT = (swaps, bounds)
    return _CONTEXT


# Programs recently found valid, by ``identity_key`` (the same objects, whatever
# their order and passes), under the context they were found valid in.
_VALID_BY_KEY = memos.kept(IdentityTable(64))


def _known_valid(program: Program, swaps: object, key: tuple | None) -> bool:
    if getattr(program, "__dict__", {}).get(_VALID_UNDER) is swaps:
        return True
    if key is not None:  # a plain program: by the objects it holds
        return _VALID_BY_KEY.result(key, swaps) is not None
    with _LOCK:  # a subclass's, by value
        for i in reversed(range(len(_VALID))):  # most recent first: a pass's input
            seen, under = _VALID[i]
            if under is swaps and _same(seen, program):
                _VALID.append(_VALID.pop(i))  # most recent last
                return True
    return False


def _same(a: Program, b: Program) -> bool:
    if a is b:
        return True
    if len(a.instrs) != len(b.instrs) or a.schedule != b.schedule or a.offsets != b.offsets:
        return False  # cheap tests first: most programs compared differ in these
    try:
        return bool(a == b)  # field by field; a shared instruction tuple compares by identity
    except Exception:  # a user's pass may put values without a plain == in attributes
        return False


def _remember_valid(program: Program, swaps: object, key: tuple | None) -> None:
    if hasattr(program, "__dict__"):
        program.__dict__[_VALID_UNDER] = swaps
    if key is not None:
        _VALID_BY_KEY.put(key, swaps, program, True)
        return
    with _LOCK:
        _VALID.append((program, swaps))
        del _VALID[:-_VALID_SIZE]


def program_violations(program: Program, context: tuple[object, tuple[int, ...]] | None = None) -> list[InvariantViolation]:
    """Every violation found: the walk's, in instruction order, then activations
    never deallocated, then (when offsets are set) MEM-1. A program holding
    the objects of one recently found valid under the same swap points and
    limits (``identity_key``; a user's subclass: equal to one) is valid (no
    walk). ``context``: ``verdict_context()``, read now unless given."""
    context = verdict_context() if context is None else context
    key = identity_key(program)
    if _known_valid(program, context, key):
        return []
    found = _walk(program, context[1])
    if not found:
        _remember_valid(program, context, key)
    return found


def _walk(program: Program, bounds: tuple[int, ...]) -> list[InvariantViolation]:
    walk = Walk(program, bounds)
    walk.run()
    found = list(walk.found)
    if program.offsets or program.peak_bytes is not None:  # allocated
        found.extend(mem1_violations(program))
    return found
