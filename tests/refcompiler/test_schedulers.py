"""Schedulers: every one emits a legal order (SCH-1); each picks as documented."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given

from specs import Dtype, OpKind

from refcompiler.deps import check_schedule, dependency_graph
from refcompiler.driver import compile_graph
from refcompiler.errors import InvariantViolation, UsageError
from refcompiler.graph import Graph, Node, Ref, Storage, StorageKind, freeze_attrs
from refcompiler.graph_json import load_graph
from refcompiler.schedulers import SCHEDULERS, resolve_scheduler
from refcompiler.schedulers.kahn import kahn
from tests.refcompiler.local_graphs import graphs

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(ROOT.glob("examples/*.json"))
RUNS = [("topo", 0), ("memory", 0)] + [("random", seed) for seed in range(5)]
F32 = Dtype.FLOAT32


def node(name: str, op: OpKind, *inputs: str, **attrs: object) -> Node:
    return Node(name, op, tuple(Ref.parse(x) for x in inputs), attrs=freeze_attrs(attrs))


def placeholder(name: str, *shape: int) -> Storage:
    return Storage(name, StorageKind.PLACEHOLDER, F32, shape)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
@pytest.mark.parametrize("name,seed", RUNS)
def test_examples_get_legal_schedules(path: Path, name: str, seed: int) -> None:
    graph = load_graph(path)
    deps = dependency_graph(graph)
    check_schedule(graph, SCHEDULERS[name](graph, deps, seed), deps)


@given(graphs())
def test_random_graphs_get_legal_schedules(graph: Graph) -> None:
    deps = dependency_graph(graph)
    for name, seed in RUNS:
        check_schedule(graph, SCHEDULERS[name](graph, deps, seed), deps)


def test_topo_breaks_ties_by_creation_order() -> None:
    graph = Graph(
        "ties",
        storage=(placeholder("P", 4),),
        nodes=(node("c", OpKind.RELU, "P"), node("a", OpKind.NEG, "P"), node("b", OpKind.TANH, "a")),
    )
    assert topo(graph) == ["c", "a", "b"]


def topo(graph: Graph) -> list[str]:
    return list(SCHEDULERS["topo"](graph, dependency_graph(graph), 0))


def test_topo_respects_memory_edges() -> None:
    # the save into P is created first, but r reads P, so it must run before s
    graph = Graph(
        "war",
        storage=(placeholder("P", 4), placeholder("out", 4)),
        nodes=(
            node("s", OpKind.SAVE, "x", target="P"),
            node("x", OpKind.RELU, "out"),
            node("r", OpKind.NEG, "P"),
            node("save_r", OpKind.SAVE, "r", target="out"),
        ),
    )
    assert topo(graph) == ["x", "r", "s", "save_r"]


def test_memory_scheduler_frees_memory_first() -> None:
    # a allocates 64 bytes, u 16; v frees a's 64 and allocates 4; s2 frees u's 16.
    graph = Graph(
        "memory",
        storage=(placeholder("P", 16), placeholder("Q", 4), placeholder("o1", 1), placeholder("o2", 4)),
        nodes=(
            node("a", OpKind.RELU, "P"),
            node("u", OpKind.RELU, "Q"),
            node("v", OpKind.REDUCE_SUM, "a", keepdims=True),
            node("s1", OpKind.SAVE, "v", target="o1"),
            node("s2", OpKind.SAVE, "u", target="o2"),
        ),
    )
    deps = dependency_graph(graph)
    assert list(SCHEDULERS["topo"](graph, deps, 0)) == ["a", "u", "v", "s1", "s2"]
    # ready {a: -64, u: -16} -> u; {a: -64, s2: +16} -> s2; then a, v (+60), s1
    assert list(SCHEDULERS["memory"](graph, deps, 0)) == ["u", "s2", "a", "v", "s1"]


def test_memory_scheduler_sees_reads_through_views() -> None:
    # n is the last node to read a directly, but t still reads it through the
    # view r: n frees nothing, so it ties with u (both allocate 16 bytes) and
    # u, created first, goes first. Blind to views, n would score 0 and win.
    graph = Graph(
        "views",
        storage=(placeholder("P", 4), placeholder("Q", 4), placeholder("o1", 4), placeholder("o2", 4), placeholder("o3", 2, 2)),
        nodes=(
            node("a", OpKind.RELU, "P"),
            node("r", OpKind.RESHAPE, "a", shape=[2, 2]),
            node("u", OpKind.RELU, "Q"),
            node("n", OpKind.NEG, "a"),
            node("t", OpKind.TANH, "r"),
            node("s_n", OpKind.SAVE, "n", target="o1"),
            node("s_u", OpKind.SAVE, "u", target="o2"),
            node("s_t", OpKind.SAVE, "t", target="o3"),
        ),
    )
    deps = dependency_graph(graph)
    order = list(SCHEDULERS["memory"](graph, deps, 0))
    check_schedule(graph, order, deps)
    assert order[:3] == ["a", "r", "u"]


def test_random_scheduler_is_seeded() -> None:
    graph = Graph(
        "wide",
        storage=(placeholder("P", 4),),
        nodes=tuple(node(f"n{i}", OpKind.RELU, "P") for i in range(6)),
    )
    deps = dependency_graph(graph)
    runs = {seed: tuple(SCHEDULERS["random"](graph, deps, seed)) for seed in range(8)}
    assert all(tuple(SCHEDULERS["random"](graph, deps, seed)) == order for seed, order in runs.items())
    assert len(set(runs.values())) > 1


def test_kahn_reports_a_cycle() -> None:
    graph = Graph("cycle", storage=(placeholder("P", 4),), nodes=(node("a", OpKind.RELU, "P"), node("b", OpKind.RELU, "P")))
    deps = nx.DiGraph([("a", "b"), ("b", "a")])
    with pytest.raises(InvariantViolation) as e:
        kahn(graph, deps, lambda ready: ready[0])
    assert e.value.invariant == "SCH-1"


def test_resolve_scheduler_names() -> None:
    for name, fn in SCHEDULERS.items():
        assert resolve_scheduler(name) is fn
    assert resolve_scheduler("refcompiler.schedulers.topo:topo_schedule") is SCHEDULERS["topo"]
    assert resolve_scheduler(f"{__name__}:backwards") is backwards


@pytest.mark.parametrize(
    "spec,needle",
    [
        ("bogus", "known: topo, memory, random"),
        ("refc_no_such_module_xyz:f", "cannot import"),
        ("os:no_such_attribute", "no attribute"),
        ("os:sep", "not callable"),
        (":topo", "known"),
    ],
)
def test_resolve_scheduler_rejects(spec: str, needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        resolve_scheduler(spec)


def backwards(graph: Graph, deps: nx.DiGraph, seed: int) -> list[str]:
    """A user's scheduler that is wrong: the reverse of a legal order."""
    return list(reversed(SCHEDULERS["topo"](graph, deps, seed)))


def test_a_wrong_user_scheduler_is_caught() -> None:
    graph = load_graph(ROOT / "examples" / "read_then_save.json")
    with pytest.raises(InvariantViolation) as e:
        compile_graph(graph, scheduler=f"{__name__}:backwards")
    assert e.value.invariant == "SCH-1"
    with pytest.raises(InvariantViolation) as e:
        compile_graph(graph, scheduler=lambda g, d, s: [1, 2, 3])
    assert e.value.invariant == "SCH-1"


def test_a_user_scheduler_cannot_edit_the_graph_or_deps_it_is_given() -> None:
    graph = load_graph(ROOT / "examples" / "sgd_momentum.json")

    def vandal(g: Graph, deps: nx.DiGraph, seed: int) -> list[str]:
        order = list(SCHEDULERS["topo"](g, deps, seed))
        g.node_by_name.clear()
        g.storage_by_name.clear()
        object.__setattr__(g, "nodes", ())
        deps.clear()
        return order

    compiled = compile_graph(graph, scheduler=vandal)
    assert len(compiled.schedule) == len(graph.nodes) and compiled.scheduled_graph.node_by_name


def test_a_user_scheduler_asked_many_times_gets_a_whole_copy_of_deps_each_time() -> None:
    from refcompiler.deps import dependency_graph
    from refcompiler.driver import scheduled_graph
    from refcompiler.schedulers import scheduler_calls

    graph = scheduled_graph(load_graph(ROOT / "examples" / "sgd_momentum.json"))
    deps = dependency_graph(graph)
    edges = sorted(deps.edges(data=True))
    seen: list[tuple[int, list]] = []

    def consuming(g: Graph, d: nx.DiGraph, seed: int) -> list[str]:  # Kahn that eats its input, as many do
        seen.append((id(d), sorted(d.edges(data=True))))
        order = []
        while d:
            n = next(n for n in d if d.in_degree(n) == 0)
            order.append(n)
            d.remove_node(n)
        d.graph["scratch"] = seed
        return order

    with scheduler_calls(consuming) as run:
        orders = [run(graph, deps, seed) for seed in range(3)]
    assert all(e == edges for _, e in seen) and orders[0] == orders[2]
    assert sorted(deps.edges(data=True)) == edges and "scratch" not in deps.graph


def test_a_user_schedule_of_str_subclasses_is_read_as_plain_names() -> None:
    class Odd(str):
        def __hash__(self) -> int:
            raise RuntimeError("no hash")

    graph = load_graph(ROOT / "examples" / "read_then_save.json")
    compiled = compile_graph(graph, scheduler=lambda g, d, s: [Odd(n) for n in SCHEDULERS["topo"](g, d, s)])
    assert all(type(n) is str for n in compiled.schedule)


def test_a_user_schedule_that_is_no_list_is_sch1_on_one_line() -> None:
    import numpy as np

    graph = load_graph(ROOT / "examples" / "sgd_momentum.json")
    with pytest.raises(InvariantViolation) as e:
        compile_graph(graph, scheduler=lambda g, d, s: np.array(SCHEDULERS["topo"](g, d, s)))
    assert e.value.invariant == "SCH-1" and "ndarray" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "tail,says",
    [(lambda order: order[-1:], "(repeated: save_late)"), (lambda order: ["__extra__"], "(unknown: __extra__)")],
    ids=["duplicate", "extra"],
)
def test_a_user_schedule_with_a_name_too_many_names_it(tail, says) -> None:
    # it was only counted: "the schedule lists 5 names; the graph has 4 nodes"
    graph = load_graph(ROOT / "examples" / "read_then_save.json")
    with pytest.raises(InvariantViolation) as e:
        compile_graph(graph, scheduler=lambda g, d, s: (order := SCHEDULERS["topo"](g, d, s)) + tail(order))
    assert e.value.invariant == "SCH-1" and str(e.value).endswith(f"the schedule is not a permutation of the nodes {says}")
    assert e.value.names == (("save_late",) if "repeated" in says else ())  # the graph's nodes it gets wrong


def test_a_user_schedule_missing_a_node_names_it() -> None:
    graph = load_graph(ROOT / "examples" / "read_then_save.json")
    with pytest.raises(InvariantViolation) as e:
        compile_graph(graph, scheduler=lambda g, d, s: SCHEDULERS["topo"](g, d, s)[:-1])
    assert e.value.invariant == "SCH-1" and "(missing: save_late)" in str(e.value) and e.value.names == ("save_late",)


def test_a_user_schedule_that_is_a_generator_is_named_so_without_its_address() -> None:
    # it was "got generator <generator object <genexpr> at 0x7f...>": another text on every run
    graph = load_graph(ROOT / "examples" / "read_then_save.json")
    with pytest.raises(InvariantViolation) as e:
        compile_graph(graph, scheduler=lambda g, d, s: (n for n in SCHEDULERS["topo"](g, d, s)))
    assert e.value.invariant == "SCH-1" and " at 0x" not in str(e.value)
    assert str(e.value).endswith("a schedule is a list of node names; got a generator, an iterator (return list(...) of it)")
