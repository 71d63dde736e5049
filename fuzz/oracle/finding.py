"""What the oracle reports: a ``Finding`` with its ``Stage``, invariant and
``Location``, and the ``Signature`` a campaign deduplicates failures by."""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from fuzz.schedules import ScheduleChoice

__all__ = ["Stage", "Bug", "Signature", "Location", "Finding", "Unsettled", "CaseReport", "CRASH", "ERROR", "crash"]

# The signature's "invariant" when no invariant id applies: refc itself raised
# an unexpected exception (CRASH), or a run failed with an ExecutionError (ERROR).
CRASH = "crash"
ERROR = "error"


class Stage(enum.Enum):
    """Where in the oracle chain a finding was made."""

    VERIFY = "verify"  # graph verifier (G-1, OWN-*)
    REFERENCE = "reference"  # the reference interpreter cannot run the case
    PROOF = "proof"  # SCH-2 by the dependency model
    COMPILE = "compile"  # scheduling, lowering, IR verifier after lowering and each pass, allocator
    SCHEDULE = "schedule"  # the compiler used a schedule the correct model rejects (SCH-1)
    EXECUTE = "execute"  # the IR interpreter and its sanitizer
    DIFFERENTIAL = "differential"  # bit-exact comparison with the reference (SEM-1)
    SYMBOLIC = "symbolic"  # symbolic translation validation: equal for all input values (SEM-1)
    TARGET = "target"  # a real compiler against itself and the reference (TGT-1..4)


@dataclass(frozen=True, order=True)
class Bug:
    """A signature without its op kinds: what a campaign shrinks a failure
    towards, so that shrinking may reach the simplest op at the fault site."""

    invariant: str
    stage: str
    blame: str = ""


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_SLUG_MAX = 200  # characters: a file name's limit is 255 bytes, ".json" and a temporary's prefix and suffix besides


@dataclass(frozen=True, order=True)
class Signature:
    """What a campaign deduplicates failures by: what the bug is, not which ops
    happened to surround it. ``invariant`` and ``stage``; ``blame``: the
    component the checker blames, when it names one (``lowering``, a pass's
    name, ``scheduler``, ``allocator``, an external target's configuration),
    else empty; ``kinds``: the op kinds at the fault *site* (``Location.site``:
    the writer of the storage that differs, the ops of an unordered pair), not
    every node involved, and none where a component of refc's compiler is
    blamed (``Finding.signature``)."""

    invariant: str
    stage: str
    kinds: tuple[str, ...]
    blame: str = ""

    def __str__(self) -> str:
        if self.blame and not self.kinds:
            return f"{self.invariant} at {self.stage} by {self.blame}"
        by = f" by {self.blame}" if self.blame else ""
        return f"{self.invariant} at {self.stage}{by} [{', '.join(self.kinds)}]"

    @property
    def slug(self) -> str:
        """A file-name friendly form, e.g. ``SEM-1.differential.save``,
        ``OWN-2.verify.none`` or ``IR-6.compile.share_buffers``: a campaign's
        case file and bug folder. The blame is a name from a user's code (a
        pass's ``module.qualname``, a target's configuration key), so anything but
        ASCII letters, digits and ``_ . -`` becomes ``_`` (a ``/`` put the case
        file outside ``cases/``; a user's scheduler ``my_sched:schedule`` is
        ``my_sched.schedule``), and a slug so changed, or cut to
        ``_SLUG_MAX`` characters, ends in a digest of its own text (two
        signatures never share a file)."""
        parts = [self.invariant, self.stage] + ([self.blame.replace(":", ".")] if self.blame else [])
        text = ".".join(parts if self.blame and not self.kinds else [*parts, "-".join(self.kinds) or "none"])
        safe = _UNSAFE.sub("_", text)
        if safe == text and len(text) <= _SLUG_MAX:
            return text
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        return f"{safe[: _SLUG_MAX - len(digest) - 1]}.{digest}"

    @property
    def bug(self) -> Bug:
        return Bug(self.invariant, self.stage, self.blame)

    def matches(self, target: "Signature | Bug") -> bool:
        """Equal to ``target``, or (a ``Bug``) to it but for the op kinds."""
        return (self.bug if isinstance(target, Bug) else self) == target

    def to_doc(self) -> dict[str, object]:
        return {"invariant": self.invariant, "stage": self.stage, "blame": self.blame, "kinds": list(self.kinds)}


@dataclass(frozen=True)
class Location:
    """Where a fault was detected, set by the stage that detects it (never
    recovered from message text). ``nodes``: the graph nodes involved, in the
    order the checker named them; ``kinds``: their op kinds, sorted;
    ``instruction``: the IR instruction's index, for a fault found in IR;
    ``site``: the op kinds at the fault itself (a subset of ``kinds``, sorted;
    ``None``: all of ``kinds``; empty: a fault no op kind identifies), which
    the signature uses."""

    nodes: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    instruction: int | None = None
    site: tuple[str, ...] | None = None


# the stages at which ``Finding.blame`` names a component of the compiler under test
# (at ``differential`` and ``symbolic``: the first pass after which the results are wrong, ``bisect``)
_BLAMED_BY_COMPONENT = frozenset({Stage.SCHEDULE, Stage.COMPILE, Stage.EXECUTE, Stage.DIFFERENTIAL, Stage.SYMBOLIC})


@dataclass(frozen=True)
class Finding:
    """One broken expectation. ``invariant`` is an id of ``specs.INVARIANTS``,
    or ``None`` when refc crashed or a run failed without one. ``schedule``:
    how the case was scheduled; ``order``: the order compiled, when known."""

    stage: Stage
    invariant: str | None
    explanation: str
    location: Location = Location()
    pipeline: str | None = None
    schedule: ScheduleChoice | None = None
    order: tuple[str, ...] | None = field(default=None, compare=False)
    crashed: bool = False
    blame: str = ""  # the component the checker blames (Signature.blame)
    # a target's finding: (the failing configuration, the one that passes or the reference), for the case
    configurations: tuple[str | None, str | None] | None = field(default=None, compare=False)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The op kinds of the nodes involved, sorted."""
        return self.location.kinds

    @property
    def signature(self) -> Signature:
        """A fault that refc's checkers blame on one of the compiler's own
        components (a pass, lowering, the scheduler, the allocator; a wrong
        result, the first pass after which it is wrong) is signed
        by that component alone: which op happened to be at the site depends on
        the graph, not on the bug (a pass that ignores every op's in-place
        list broke six different ops' lists in one campaign). Elsewhere (a
        wrong result no pass is blamed for, an external target's
        configuration) the op kinds at the site are what tell two bugs apart.

        A wrong result blamed on a pass is signed at ``differential`` when the
        symbolic stage found it too: its counterexample is confirmed by a
        concrete run on the values Z3 found, the differential's test on other
        inputs, so one pass's wrong result is one finding whichever inputs
        showed it first (the explanation says which stage)."""
        stage = self.stage
        if self.blame and stage in _BLAMED_BY_COMPONENT:
            kinds: tuple[str, ...] = ()
            if stage is Stage.SYMBOLIC:
                stage = Stage.DIFFERENTIAL
        else:
            kinds = self.kinds if self.location.site is None else self.location.site
        return Signature(self._id(), stage.value, kinds, self.blame)

    def _id(self) -> str:
        return self.invariant or (CRASH if self.crashed else ERROR)

    def __str__(self) -> str:
        where = [f"pipeline {self.pipeline}"] if self.pipeline else []
        if self.schedule is not None:
            where.append(self.schedule.describe())
        suffix = f" ({'; '.join(where)})" if where else ""
        by = f" by {self.blame}" if self.blame else ""  # whose fault: a pass, a user's scheduler, a target's configuration
        return f"{self._id()} at {self.stage.value}{by}: {self.explanation}{suffix}"


@dataclass(frozen=True)
class Unsettled:
    """A compiled program the symbolic stage could neither prove nor refute
    (Z3 unknown or its time limit, a difference Z3 found that the concrete run
    on its values does not confirm, the term bound): not a finding, but worth a
    look, so a campaign reports it. ``schedule``: how the case was scheduled;
    ``order``: the order compiled; ``reason``: the validator's verdict;
    ``difference``: where the terms first differ, when Z3 was asked."""

    pipeline: str
    schedule: ScheduleChoice | None
    order: tuple[str, ...] | None
    reason: str
    difference: str | None = None


@dataclass(frozen=True)
class CaseReport:
    finding: Finding | None
    schedules: int  # schedules compiled and run (each under every pipeline)
    refused: str | None = None  # why an external target refused the graph
    seconds: Mapping[str, float] = field(default_factory=dict)  # wall-clock seconds by oracle stage (``GraphContext.seconds``)
    # what each scheduler asked answered, by (scheduler, seed) (``GraphContext.scheduler_orders``)
    scheduler_orders: Mapping[tuple[str, int], tuple[str, ...]] = field(default_factory=dict)
    # the programs the symbolic stage left unsettled, in the order checked (``GraphContext.symbolic_inconclusive``)
    unsettled: tuple[Unsettled, ...] = ()


def crash(stage: Stage, e: BaseException, **where: object) -> Finding:
    """refc raised something that is not one of its own errors: a finding, not an abort."""
    return Finding(stage, None, f"refc raised {type(e).__name__}: {e}", crashed=True, **where)  # type: ignore[arg-type]
