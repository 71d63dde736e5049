"""``refc bench --validate``: the symbolic validator beside concrete execution, in one run.

Rows: generated graphs (``refcompiler.proofs.scale.large_graph``, every value
``float32[4]``, reshaped by ``chain_graph`` to other sizes) of about 200
instructions over 8-element tensors and about 1,000 over 64-element tensors,
each compiled once at O2: seconds for ``validate_compiled`` (two runs) beside
seconds for two concrete runs (``run_compiled``) and the reference; and
``--all-schedules`` on a 10-node graph of three independent chains (4,200
legal orders), with the numbers of orders and distinct programs.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

from refc.cli.common import whole, whole_number
from refcompiler.limits import shown
from refcompiler.symbolic.defaults import DEFAULT_ORDER_LIMIT

if TYPE_CHECKING:
    from refcompiler.graph import Graph

__all__ = ["SECTION_ARGS", "add_arguments", "measure", "render", "chain_graph", "chains_graph"]

SIZES = ((200, 8), (1000, 64))


def chain_graph(instructions: int, elements: int) -> Graph:
    """A valid graph that lowers to about ``instructions`` instructions over
    ``float32[elements]`` values: elementwise ops over recent values, an
    accumulator, and saves into placeholders that are also read."""
    from specs import Dtype, OpKind

    from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind, freeze_attrs

    f32 = Dtype.FLOAT32
    unary = (OpKind.RELU, OpKind.NEG, OpKind.TANH, OpKind.EXP)
    binary = (OpKind.ADD, OpKind.SUB, OpKind.MUL, OpKind.MAX)
    shape = (elements,)
    storage = [Storage(f"p{i}", StorageKind.PLACEHOLDER, f32, shape, init=Init(seed=i)) for i in range(4)]
    storage.append(Storage("acc", StorageKind.OWNED, f32, shape, owner="acc_node"))
    nodes: list[Node] = []
    values = [Ref(f"p{i}") for i in range(4)]
    for k in range(max(4, instructions * 3 // 4) - 5):  # about 1.4 instructions per node at O2
        op = unary[k % 4] if k % 3 == 0 else binary[k % 4]
        ins = (values[-1],) if op in unary else (values[-1], values[-1 - (k % 5) % len(values)])
        nodes.append(Node(f"n{k}", op, ins))
        values.append(Ref(f"n{k}"))
    nodes.append(Node("acc_node", OpKind.ACCUMULATE, (values[-1],), state=("acc",)))
    for i in range(4):
        nodes.append(Node(f"save{i}", OpKind.SAVE, (values[-1 - i],), attrs=freeze_attrs({"target": f"p{i}"})))
    return Graph("bench.validate", tuple(storage), tuple(nodes))


def chains_graph() -> Graph:
    """Ten nodes in three independent chains of 4, 3 and 3: 10!/(4!*3!*3!) = 4,200 legal orders."""
    from specs import Dtype, OpKind

    from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind, freeze_attrs

    f32 = Dtype.FLOAT32
    shape = (4,)
    storage = [Storage(n, StorageKind.PLACEHOLDER, f32, shape, init=Init(seed=i)) for i, n in enumerate(("a", "b", "c", "qa", "qb", "qc"))]
    storage.append(Storage("acc", StorageKind.OWNED, f32, shape, owner="b1"))
    nodes = [
        Node("a1", OpKind.RELU, (Ref("a"),)), Node("a2", OpKind.NEG, (Ref("a1"),)),
        Node("a3", OpKind.ADD, (Ref("a2"), Ref("a1"))), Node("a4", OpKind.SAVE, (Ref("a3"),), attrs=freeze_attrs({"target": "qa"})),
        Node("b1", OpKind.ACCUMULATE, (Ref("b"),), state=("acc",)), Node("b2", OpKind.TANH, (Ref("b1"),)),
        Node("b3", OpKind.SAVE, (Ref("b2"),), attrs=freeze_attrs({"target": "qb"})),
        Node("c1", OpKind.EXP, (Ref("c"),)), Node("c2", OpKind.MUL, (Ref("c1"), Ref("c"))),
        Node("c3", OpKind.SAVE, (Ref("c2"),), attrs=freeze_attrs({"target": "qc"})),
    ]
    return Graph("bench.chains", tuple(storage), tuple(nodes))


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("validate section")
    g.add_argument("--validate-sizes", type=_sizes, default=SIZES, metavar="IxE,...", help="instructions x elements per row (default 200x8,1000x64)")
    g.add_argument("--validate-all-pipeline", default="O2", metavar="P", help="pipeline of the all-schedules row (default O2)")
    g.add_argument("--validate-max-orders", type=whole_number(1), default=DEFAULT_ORDER_LIMIT, metavar="N", help="orders the all-schedules row may cover")


def _sizes(text: str) -> tuple[tuple[int, int], ...]:
    sizes = []
    for item in (item for item in text.split(",") if item.strip()):
        instrs, sep, elements = item.partition("x")
        count, size = whole(instrs.strip()), whole(elements.strip())
        if not sep or count is None or size is None:
            raise argparse.ArgumentTypeError(f"expected sizes like 200x8,1000x64, got {shown(text)}")
        sizes.append((count, size))
    if not sizes or any(i < 10 or e < 1 for i, e in sizes):
        raise argparse.ArgumentTypeError(f"needs at least 10 instructions and 1 element per row, got {text!r}")
    return tuple(sizes)


def _timed(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from refcompiler.driver import compile_graph, run_compiled
    from refcompiler.reference import run_reference
    from refcompiler.symbolic import validate_compiled
    from refcompiler.symbolic.schedules import validate_all_schedules

    rows = []
    for instructions, elements in args.validate_sizes:
        graph = chain_graph(instructions, elements)
        compiled = compile_graph(graph, pipeline="O2")
        seconds, v = _timed(lambda: validate_compiled(graph, compiled, runs=2))
        concrete, _ = _timed(lambda: run_compiled(compiled, runs=2))
        reference, _ = _timed(lambda: run_reference(graph, runs=2))
        rows.append({"instructions": len(compiled.program.instrs), "elements": elements, "verdict": v.verdict.value,
                     "validate_seconds": round(seconds, 6), "concrete_seconds": round(concrete, 6),
                     "reference_seconds": round(reference, 6), "terms": v.terms, "used_z3": v.used_z3})
    graph = chains_graph()
    seconds, result = _timed(lambda: validate_all_schedules(graph, pipeline=args.validate_all_pipeline, limit=args.validate_max_orders))
    every = {"nodes": len(graph.nodes), "pipeline": args.validate_all_pipeline, "orders": result.orders,
             "enumerated_all": result.enumerated_all, "programs": result.programs, "verdict": result.verdict.value,
             "seconds": round(seconds, 3)}
    return {"programs": rows, "all_schedules": every}


def render(data: dict[str, Any]) -> str:
    from refc.cli.bench import _table

    table = [("instructions", "elements", "validate s", "concrete s", "reference s", "terms", "z3", "verdict")]
    for r in data["programs"]:
        table.append((str(r["instructions"]), str(r["elements"]), f"{r['validate_seconds']:.3f}", f"{r['concrete_seconds']:.3f}",
                      f"{r['reference_seconds']:.3f}", str(r["terms"]), "yes" if r["used_z3"] else "no", r["verdict"]))
    a = data["all_schedules"]
    covered = f"all {a['orders']}" if a["enumerated_all"] else f"{a['orders']} (not all)"
    lines = ["validate: symbolic translation validation (two runs) beside two concrete runs and the reference, one process", *_table(table),
             f"validate --all-schedules: {a['nodes']} nodes, pipeline {a['pipeline']}: {covered} legal orders, "
             f"{a['programs']} distinct programs, {a['verdict']}, {a['seconds']:.1f} s"]
    return "\n".join(lines) + "\n"


SECTION_ARGS = ("validate", "symbolic translation validation beside concrete execution", add_arguments, measure, render)
