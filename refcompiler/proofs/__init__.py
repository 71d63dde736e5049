"""Schedule-legality proofs (SCH-2, DESIGN §4) and allocation proofs (MEM-1).

Modules: ``conflicts`` (conflicting pairs, the problem every decider gets),
``reach`` (reachability), ``z3_decider`` (Z3 positions), ``enumerate`` (every
legal order: the third oracle for tests), ``proof`` (``prove`` and its verdicts), ``witness``
(counterexample schedules, adversarial orders, miscompile confirmation),
``alloc`` (MEM-1 and optimal peak with Z3), ``scale`` (large valid graphs),
``smt`` (the only module that imports z3).
"""

from refcompiler.proofs.conflicts import Conflict, conflicts
from refcompiler.proofs.enumerate import all_legal_orders
from refcompiler.proofs.proof import Counterexample, Proof, Verdict, prove
from refcompiler.proofs.witness import adversarial_schedule, confirm_miscompile, witness_schedules

__all__ = [
    "Verdict",
    "Conflict",
    "Counterexample",
    "Proof",
    "conflicts",
    "prove",
    "all_legal_orders",
    "adversarial_schedule",
    "witness_schedules",
    "confirm_miscompile",
]
