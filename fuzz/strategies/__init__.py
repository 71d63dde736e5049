"""Hypothesis strategies for graphs (DESIGN §8): ``graphs`` and ``invalid_graphs``.

``graphs()`` (``valid``) draws graphs that are valid by construction (the
verifier accepts every one; a test checks that): consistent shapes and
dtypes, owned variables created together with their owner, placeholders that
are both read and saved (the classic write-after-read hazard), swaps of
placeholders that close save cycles, chains and diamonds of in-place
candidates and twins, op(x, y) beside op(y, x) (``patterns``), views, several
results, broadcasting, integer ids within their table (where a value reaches an
index input, ``OpSpec.index_inputs``) and int32 values across the whole range
elsewhere, and in one graph in eight float32 values with exact ties and both
signed zeros (``builder.TIES``).

Swarm testing: each example enables a random subset of the ops and of the
``Feature``s, so that rare combinations are not drowned by common ones. A
final step saves some of the results no node reads (unsaved, they would be
dead code that graph DCE removes before any pass could get them wrong).

Structure is drawn locally, one *move* at a time (an op from the enabled set,
then its operands among the values made so far or fresh storage; the
``builder``), so that Hypothesis shrinks a failing graph by deleting moves
and reaches a handful of nodes. Every choice goes through ``draws.Draws``:
one Hypothesis draw each under the strategies, or a seeded ``random.Random``
(``RandomDraws``, what a campaign generates with) that records the choices as
Hypothesis would, so that Hypothesis can replay and shrink a case it did not
generate. Every op's operand recipe is in ``BUILDERS``
(``recipes``: derived from the spec table, one entry per op, which a test
checks); result types always come from the spec's shape rule.

``invalid_graphs(invariant=...)`` (``invalid``) draws a valid graph and
breaks exactly that invariant (G-1, OWN-1..4) with one small edit.
"""

from fuzz.strategies.builder import Feature
from fuzz.strategies.invalid import REJECTABLE, invalid_graphs
from fuzz.strategies.recipes import BUILDERS
from fuzz.strategies.valid import graphs

__all__ = ["Feature", "BUILDERS", "REJECTABLE", "graphs", "invalid_graphs"]
