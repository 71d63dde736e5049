"""Every pass, alone and in pipelines, leaves valid IR that computes bit-exactly
what the reference interpreter computes (two runs), on random graphs.

Graphs are lowered without graph ``dce`` so that dead code is left for
``dead_store_elimination``, and optionally *loosened* (every ``alloc`` moved to
the top, every ``dealloc`` to the bottom: still valid IR) so that
``sink_alloc`` and ``hoist_dealloc`` have work to do. ``run_pipeline``
verifies the IR after every pass. Activations get disjoint arena offsets here
(no reuse), so that a failure points at a pass, not at the allocator.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzz.strategies import graphs
from refcompiler.deps import break_save_cycles, dependency_graph
from refcompiler.effects import storage_behind
from refcompiler.errors import ExecutionError
from refcompiler.graph import Graph
from refcompiler.interpreter import execute
from refcompiler.ir import Opcode, Program
from refcompiler.ir_analysis import activations, name_types
from refcompiler.lowering import lower
from refcompiler.passes import PASSES, PIPELINES, resolve_pipeline, run_pipeline
from refcompiler.reference import run_reference
from refcompiler.schedulers import SCHEDULERS
from refcompiler.values import bind_inputs, same_bits
from refcompiler.verifier import verify

SPECS = ["O0", "O2", *PASSES, ",".join(reversed(PIPELINES["O2"])), ",".join(PIPELINES["O2"] * 2)]


def _saves_own_target(graph: Graph) -> bool:
    # lowering turns such a save into `copy P <- P`, which IR-6 rejects: reported to
    # the lowering's owner; not what these tests are about
    return any(storage_behind(graph, node.inputs[0]) == node.target for node in graph.saves())


def _loosen(program: Program) -> Program:
    allocs = [i for i in program.instrs if i.opcode is Opcode.ALLOC]
    deallocs = [i for i in program.instrs if i.opcode is Opcode.DEALLOC]
    rest = [i for i in program.instrs if i.opcode not in (Opcode.ALLOC, Opcode.DEALLOC)]
    return program.with_instrs([*allocs, *rest, *deallocs])


def _disjoint_offsets(program: Program) -> Program:
    types = name_types(program)
    offsets, top = [], 0
    for name in activations(program):
        offsets.append((name, top))
        top += -(-types[name].nbytes // 16) * 16
    return replace(program, offsets=tuple(offsets), peak_bytes=top)


@given(
    graphs(max_nodes=10).filter(lambda g: not _saves_own_target(g)),
    st.sampled_from(sorted(SCHEDULERS)),
    st.booleans(),
)
def test_passes_preserve_semantics(graph, scheduler, loose):
    verify(graph)
    scheduled = break_save_cycles(graph)
    order = SCHEDULERS[scheduler](scheduled, dependency_graph(scheduled), 0)
    lowered = lower(scheduled, order)
    if loose:
        lowered = _loosen(lowered)
    inputs = bind_inputs(scheduled, {})
    try:
        expected = run_reference(graph, runs=2)
    except ExecutionError:
        expected = None
    for spec in SPECS:
        program = _disjoint_offsets(run_pipeline(lowered, resolve_pipeline(spec)))
        if expected is None:
            with pytest.raises(ExecutionError):
                execute(program, inputs, runs=2)
            continue
        got = execute(program, inputs, runs=2)
        assert sorted(got) == sorted(expected)
        for name, value in expected.items():
            assert same_bits(got[name], value), f"{spec}: {name} differs"


@given(graphs(max_nodes=10).filter(lambda g: not _saves_own_target(g)))
def test_passes_are_idempotent_on_their_own_output(graph):
    scheduled = break_save_cycles(graph)
    lowered = lower(scheduled, SCHEDULERS["topo"](scheduled, dependency_graph(scheduled), 0))
    for name, run in PASSES.items():
        once = run(lowered)
        assert run(once) == once, name
