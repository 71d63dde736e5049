"""The independent statement of G-1 agrees with the verifier: on generated valid
graphs, on every edit that breaks an invariant, on the reducer's edits of
those, and on graphs built to break G-1 each way; and with it, a case that a
verifier with a G-1 bug accepts shrinks to its fault."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings

from specs import Dtype, OpKind

from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind, freeze_attrs
from refcompiler.verifier import violations

from fuzz.g1 import breaks_g1
from fuzz.shrink import breaks_only, candidates, reduce_graph
from fuzz.strategies import graphs

from tests.fuzz.edits import EDITS, edited


def _verifier_says(graph: Graph) -> bool:
    return any(v.invariant == "G-1" for v in violations(graph))


@settings(max_examples=60, database=None)
@given(graphs(max_nodes=8))
def test_a_valid_graph_does_not_break_g1(graph):
    assert not breaks_g1(graph)


@pytest.mark.parametrize("invariant,edit", EDITS)
def test_it_says_what_the_verifier_says_of_every_edit_and_of_the_reducers_edits_of_it(invariant, edit):
    @settings(max_examples=8, database=None, suppress_health_check=list(HealthCheck))
    @given(edited(invariant, edit))
    def check(graph):
        assert breaks_g1(graph) == _verifier_says(graph)
        for k, smaller in enumerate(candidates(graph)):
            assert breaks_g1(smaller) == _verifier_says(smaller), smaller
            if k == 12:
                break

    check()


F32 = dict(dtype=Dtype.FLOAT32, shape=(2,), init=Init(seed=1))
X = Storage("x", StorageKind.PLACEHOLDER, **F32)
OWNED = Storage("o", StorageKind.OWNED, owner="acc", **F32)


def node(name: str, op: OpKind, *inputs: str, state: tuple[str, ...] = (), **attrs: object) -> Node:
    return Node(name=name, op=op, inputs=tuple(Ref.parse(r) for r in inputs), state=state, attrs=freeze_attrs(attrs))


def graph(*nodes: Node, storage: tuple[Storage, ...] = (X,)) -> Graph:
    return Graph(name="g", storage=storage, nodes=nodes)


@pytest.mark.parametrize(
    "g, breaks",
    [
        (graph(node("r", OpKind.RELU, "x")), False),
        (graph(node("x", OpKind.RELU, "x")), True),  # a name used twice
        (graph(node("a", OpKind.ADD, "x")), True),  # an input too few
        (graph(node("r", OpKind.RELU, "x", "x")), True),  # an input too many
        (graph(node("c", OpKind.CONCAT)), True),  # variadic, none
        (graph(node("c", OpKind.CONCAT, "x", "x", "x")), False),
        (graph(node("acc", OpKind.ACCUMULATE, "x"), storage=(X, OWNED)), True),  # no state
        (graph(node("acc", OpKind.ACCUMULATE, "x", state=("o",)), storage=(X, OWNED)), False),
        (graph(node("acc", OpKind.ACCUMULATE, "x", state=("p",)), storage=(X, OWNED)), True),  # state names nothing
        (graph(node("q", OpKind.QUANTIZATION_PROFILE, "x", state=("o", "o")), storage=(X, replace(OWNED, owner="q"))), True),
        (graph(node("r", OpKind.RELU, "x:0")), True),  # ':k' on storage
        (graph(node("r", OpKind.RELU, "y")), True),  # names nothing
        (graph(node("s", OpKind.SAVE, "x", target="x"), node("r", OpKind.RELU, "s")), True),  # a node without results
        (graph(node("d", OpKind.ADD_SUB, "x", "x"), node("r", OpKind.RELU, "d")), True),  # which result?
        (graph(node("d", OpKind.ADD_SUB, "x", "x"), node("r", OpKind.RELU, "d:1")), False),
        (graph(node("d", OpKind.ADD_SUB, "x", "x"), node("r", OpKind.RELU, "d:2")), True),  # no result 2
        (graph(node("r", OpKind.RELU, "x", bogus=1)), True),  # an unknown attribute
        (graph(node("s", OpKind.SAVE, "x")), True),  # a required attribute missing
        (graph(node("t", OpKind.TRANSPOSE, "x", perm=(0.5,))), True),  # an attribute of the wrong kind
        (graph(node("r", OpKind.RELU, "x"), storage=(X, replace(OWNED, owner="nobody"))), True),  # an owner naming no node
        (graph(node("a", OpKind.RELU, "b"), node("b", OpKind.RELU, "a")), True),  # a cycle
        (graph(node("a", OpKind.RELU, "a")), True),  # a node reading itself
        (graph(node("m", OpKind.MUL, "x", "i"), storage=(X, Storage("i", StorageKind.PLACEHOLDER, Dtype.INT32, (2,), Init(seed=0, low=0, high=3)))), True),
        (graph(node("acc", OpKind.ACCUMULATE, "x", state=("o",)), storage=(X, replace(OWNED, dtype=Dtype.INT32, init=Init(seed=0, low=0, high=3)))), True),
        (graph(node("a", OpKind.ADD, "x", "y"), storage=(X, Storage("y", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (3,), Init(seed=2)))), True),  # shapes
        (graph(node("m", OpKind.MATMUL, "x", "y"), storage=(X, Storage("y", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (3, 2), Init(seed=2)))), True),
        (graph(node("s", OpKind.SAVE, "x", target="y"), storage=(X, Storage("y", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (3,), Init(seed=2)))), True),
        (graph(node("s", OpKind.SAVE, "x", target="z")), True),  # a target naming nothing
        (graph(node("r", OpKind.RELU, "x"), node("s", OpKind.SAVE, "r", target="x")), False),
    ],
)
def test_each_way_to_break_g1_and_its_valid_twins(g, breaks):
    assert breaks_g1(g) == breaks == _verifier_says(g)


def test_a_case_a_verifier_with_a_g1_bug_accepts_shrinks_to_its_fault(monkeypatch):
    # a verifier that checks the dtype of a node's first input only, and the case it
    # let through (found by a campaign; 7 nodes, 6 of them unrelated to the fault)
    from refcompiler import verifier

    def first_input_only(node, spec, ins):
        want = spec.input_dtype(0, ins[0].dtype) if ins else None
        if want is not None and ins[0].dtype is not want:
            raise verifier._g1("wrong dtype", node.name)

    i32 = Storage("bad_p1", StorageKind.PLACEHOLDER, Dtype.INT32, (1,), Init(seed=0, low=0, high=3))
    p0 = Storage("p0", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (2, 1), Init(seed=0))
    p2 = Storage("bad_p2", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (1,), Init(seed=1))
    case = graph(
        node("reshape0", OpKind.RESHAPE, "p0", shape=(2, 1)),
        node("relu1", OpKind.RELU, "p0"),
        node("sub2", OpKind.SUB, "reshape0", "relu1"),
        node("sub3", OpKind.SUB, "sub2", "relu1"),
        node("roll4", OpKind.ROLL, "sub3"),
        node("save5", OpKind.SAVE, "roll4", target="p0"),
        node("bad3", OpKind.MUL, "bad_p2", "bad_p1"),
        storage=(p0, i32, p2),
    )
    assert breaks_g1(case) and _verifier_says(case)
    monkeypatch.setattr(verifier, "_check_input_dtypes", first_input_only)
    assert not _verifier_says(case)  # the bug: it lets the case through
    shrunk = reduce_graph(case, lambda g: not _verifier_says(g), acceptable=breaks_only("G-1"))
    (fault,) = shrunk.nodes  # one binary op (the reducer turns mul into add) reading the int32 placeholder second
    assert breaks_g1(shrunk) and shrunk.storage_by_name[fault.inputs[1].name].dtype is Dtype.INT32
