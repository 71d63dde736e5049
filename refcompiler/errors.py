"""The project's small error hierarchy.

Every error a user can cause is a ``RefCompilerError``; the command line turns
each into one readable message and an exit code, never a traceback:

- ``MalformedInput`` (exit 2): the file cannot be read as a graph, a case or a
  program; names the file and the field.
- ``UsageError`` (exit 2): a bad flag value, an unknown name.
- ``LimitExceeded`` (exit 2): an input would make refc use more than a
  resource limit allows (``refcompiler.limits``); names the file or node and
  the limit.
- ``InvariantViolation`` (exit 1): a checker found a broken invariant; carries
  its id (DESIGN §6), the names involved and, where there is one, the IR around
  the fault.
- ``ExecutionError`` (exit 1): a run failed, e.g. an embedding id out of range.
- ``InternalError`` (exit 4): a bug in refc itself, e.g. two deciders disagree.
"""

from __future__ import annotations

__all__ = [
    "RefCompilerError",
    "MalformedInput",
    "UsageError",
    "LimitExceeded",
    "InvariantViolation",
    "ExecutionError",
    "InternalError",
]


class RefCompilerError(Exception):
    exit_code = 1


class MalformedInput(RefCompilerError):
    exit_code = 2

    def __init__(self, message: str, *, path: str | None = None, field: str | None = None):
        self.path = path
        self.field = field
        where = ": ".join(p for p in (path, field) if p)
        super().__init__(f"{where}: {message}" if where else message)


class UsageError(RefCompilerError):
    exit_code = 2


class LimitExceeded(RefCompilerError):
    """``path``: the file the breach is in, leading the message; ``None`` for a
    breach found in a graph already loaded (shape inference names the node; the
    command line adds the graph file it read)."""

    exit_code = 2

    def __init__(self, message: str, *, path: str | None = None):
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class InvariantViolation(RefCompilerError):
    """A broken invariant: ``invariant`` is an id of ``specs.INVARIANTS``.

    ``instruction`` / ``instruction_name``: for a fault found in IR, the index
    of the instruction and its ``Instr.name`` (the node of a kernel or copy,
    the value of an alloc or view), so that a caller can locate the fault
    without reading the message. ``program``: the IR it was found in, when a
    compilation step found it (after lowering, a pass, or allocation), for a
    picture of the fault; it does not travel to another process.
    """

    exit_code = 1

    def __init__(
        self,
        invariant: str,
        message: str,
        *,
        names: tuple[str, ...] = (),
        context: str = "",
        stage: str = "",
        instruction: int | None = None,
        instruction_name: str | None = None,
    ):
        from specs import INVARIANTS

        if invariant not in INVARIANTS:
            raise InternalError(f"unknown invariant id {invariant!r}")
        self.invariant = invariant
        self.names = tuple(names)
        self.detail = message
        self.context = context
        self.instruction = instruction
        self.instruction_name = instruction_name
        self.program: object | None = None  # a refcompiler.ir.Program
        # where in the pipeline it was found, e.g. "after pass share_buffers"; prefixes the text
        self.stage = stage
        text = f"{invariant}: {message}"
        if stage:
            text = f"{stage}: {text}"
        if context:
            text += "\n" + context
        super().__init__(text)

    def __reduce__(self) -> tuple[object, ...]:
        # picklable with its fields (a campaign's worker process sends what it raised
        # to the campaign; the default would call __init__ with the message only)
        return (_violation, (self.invariant, self.detail, self.names, self.context, self.stage, self.instruction, self.instruction_name))

    def at(self, stage: str) -> "InvariantViolation":
        """The same violation, found at ``stage`` (which leads its message)."""
        found = InvariantViolation(
            self.invariant,
            self.detail,
            names=self.names,
            context=self.context,
            stage=stage,
            instruction=self.instruction,
            instruction_name=self.instruction_name,
        )
        found.program = self.program
        return found


class ExecutionError(RefCompilerError):
    """A run or a compile that failed. ``component``: the part of the compiler under
    test whose code failed, when it is a user's (a pass by name, ``scheduler``),
    which a fuzz finding blames, so that two plug-ins' failures are two findings."""

    exit_code = 1

    def __init__(self, message: str, *, node: str | None = None, component: str = ""):
        self.node = node
        self.component = component
        super().__init__(message)


class InternalError(RefCompilerError):
    """A bug in refc itself (e.g. two deciders that disagree)."""

    exit_code = 4


def _violation(invariant: str, message: str, names: tuple[str, ...], context: str, stage: str,
               instruction: int | None, instruction_name: str | None) -> InvariantViolation:
    return InvariantViolation(invariant, message, names=names, context=context, stage=stage,
                              instruction=instruction, instruction_name=instruction_name)
