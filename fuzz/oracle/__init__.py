"""The oracle chain (DESIGN §7): static, proof and dynamic checks of one case.

``check(graph, schedule, pipeline, mutant)`` returns ``None`` or the first
``Finding``: the stage that caught it, the invariant id, a short explanation,
its ``Location`` (nodes, op kinds, IR instruction), and a ``signature``
(invariant, stage, op kinds involved) that a campaign deduplicates failures
by. The stages, in the order of ``fuzz.oracle.chain.CHAIN``, one module each
under ``fuzz/oracle/stages/``:

1. ``verify``: the graph verifier accepts a graph expected to pass, or
   rejects one expected to be rejected with the expected id (G-1, OWN-1..4);
2. ``reference``: the reference interpreter runs the case twice;
3. ``proof``: SCH-2 by reachability: every pair of conflicting nodes is
   ordered by the dependency model;
4. ``compile`` (per schedule and pipeline: the pipeline under test, and
   ``O0`` under the graph's first schedule and wherever the pipeline under
   test finds something, ``chain.iter_findings``): compile (the driver verifies the IR after lowering and after every
   pass), check the order used against the *correct* dependency model
   (SCH-1; an explicit order that is illegal must be rejected), run twice
   under the sanitizer;
5. ``differential``: every placeholder and owned variable is bit-identical
   with the reference after each run (SEM-1); comparing both pipelines with
   the reference compares ``O0`` with ``O2``.

The reference interpreter and the correct dependency model run *outside*
the mutant (they are the oracle); the verifier, the proof, the schedulers,
the compiler and the IR interpreter run inside ``mutants.activate(mutant)``.
Per-graph work (verification, reference runs, the schedulable graph and its
dependency model) is done once per graph (``GraphContext``), and a campaign
carries what it knows of a graph object to the next case of it (``Carry``).
"""

from fuzz.oracle.chain import CHAIN, iter_findings
from fuzz.oracle.check import check, check_case, legal_on_correct_compiler
from fuzz.oracle.context import Carry, GraphContext, RunContext, reference_runs
from fuzz.oracle.finding import CRASH, Bug, CaseReport, Finding, Location, Signature, Stage, Unsettled
from fuzz.oracle.stage import OracleStage
from fuzz.oracle.stages.verify import check_rejected

__all__ = [
    "Stage",
    "Signature",
    "Bug",
    "Location",
    "Finding",
    "CaseReport",
    "Unsettled",
    "CRASH",
    "CHAIN",
    "OracleStage",
    "Carry",
    "GraphContext",
    "RunContext",
    "check",
    "check_case",
    "check_rejected",
    "iter_findings",
    "reference_runs",
    "legal_on_correct_compiler",
]
