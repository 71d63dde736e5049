"""The exporter: every example and generated graphs, run by onnx.reference, give
refc's reference result over two runs (state carried as inputs and outputs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import given
from onnx.reference import ReferenceEvaluator

from specs import OpKind

from fuzz.strategies import graphs
from refcompiler.errors import InvariantViolation
from refcompiler.graph import Graph, Init, Node, Ref, Storage, StorageKind, freeze_attrs
from refcompiler.graph_json import load_graph
from refcompiler.onnx_io.compare import within
from refcompiler.onnx_io.exporter import exit_names, export_graph
from refcompiler.onnx_io.lowerings import LOWERINGS
from refcompiler.reference import run_reference
from refcompiler.values import initial_values
from specs import Dtype

from tests.refcompiler.onnx_io.roundtrip import run_exported

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples").glob("*.json"))
# refc ops whose export computes in exactly the kernel's float operations (all but these)
NOT_EXACT = {OpKind.TANH, OpKind.EXP, OpKind.MATMUL, OpKind.REDUCE_SUM}


def assert_round_trip(graph: Graph) -> None:
    model = export_graph(graph)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    exact = not any(n.op in NOT_EXACT for n in graph.nodes)
    for runs, got in enumerate(run_exported(graph, runs=2), start=1):
        want = run_reference(graph, runs=runs)
        for name in set(exit_names(graph).values()):
            ok, ulps = within(got[name], want[name], exact=exact)
            assert ok, f"{graph.name}: '{name}' after run {runs} differs by {ulps} ULP"


def test_every_op_has_a_lowering():
    assert [k for k in OpKind if k not in LOWERINGS] == []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_round_trip_through_onnx_reference(path):
    assert_round_trip(load_graph(path))


@given(graphs())
def test_generated_graphs_round_trip_through_onnx_reference(graph):
    assert_round_trip(graph)


def _graph(*nodes: Node, storage: tuple[Storage, ...]) -> Graph:
    return Graph(name="g", storage=storage, nodes=nodes)


def f32(name: str, kind: StorageKind, shape: tuple[int, ...], owner: str | None = None) -> Storage:
    return Storage(name, kind, Dtype.FLOAT32, shape, init=Init(seed=len(name)), owner=owner)


def test_quantization_profile_counts_nan_and_infinities_in_the_end_bins():
    x = Storage("x", StorageKind.PLACEHOLDER, Dtype.FLOAT32, (6,))
    graph = _graph(
        Node("prof", OpKind.QUANTIZATION_PROFILE, (Ref("x"),), state=("mm", "hist"), attrs=freeze_attrs({"lo": -1.0, "hi": 1.0})),
        storage=(x, f32("mm", StorageKind.OWNED, (2,), "prof"), f32("hist", StorageKind.OWNED, (4,), "prof")),
    )
    special = np.array([np.nan, np.inf, -np.inf, 0.5, -0.99, 7.0], dtype=np.float32)
    feeds = {**initial_values(graph), "x": special}
    got = dict(zip(exit_names(graph), ReferenceEvaluator(export_graph(graph)).run(None, feeds), strict=True))
    want = run_reference(graph, {"x": special})
    assert within(got["hist.exit"], want["hist"], exact=True)[0]
    assert within(got["mm.exit"], want["mm"], exact=True)[0]
    assert np.isnan(want["mm"]).all()  # NaN reaches the running min and max, in both


def test_embedding_update_sums_duplicate_ids_like_add_at():
    ids = Storage("ids", StorageKind.CONSTANT, Dtype.INT32, (3,), init=Init(value=(1, 1, 0)))
    graph = _graph(
        Node("emb", OpKind.EMBEDDING_UPDATE, (Ref("ids"), Ref("g")), state=("table",)),
        Node("s", OpKind.SAVE, (Ref("emb"),), attrs=freeze_attrs({"target": "rows"})),
        storage=(ids, f32("g", StorageKind.PLACEHOLDER, (3, 2)), f32("table", StorageKind.OWNED, (2, 2), "emb"), f32("rows", StorageKind.PLACEHOLDER, (3, 2))),
    )
    assert_round_trip(graph)


def test_an_empty_list_attribute_is_exported_as_empty_ints():
    # a scalar's transpose has perm []: onnx cannot infer an empty list's attribute type
    graph = _graph(
        Node("r", OpKind.REDUCE_SUM, (Ref("x"),)),
        Node("t", OpKind.TRANSPOSE, (Ref("r"),), attrs=freeze_attrs({"perm": []})),
        Node("u", OpKind.RESHAPE, (Ref("t"),), attrs=freeze_attrs({"shape": [1]})),
        Node("s", OpKind.SAVE, (Ref("u"),), attrs=freeze_attrs({"target": "y"})),
        storage=(f32("x", StorageKind.PLACEHOLDER, (2,)), f32("y", StorageKind.PLACEHOLDER, (1,))),
    )
    (perm,) = [a for n in export_graph(graph).graph.node if n.op_type == "Transpose" for a in n.attribute]
    assert (perm.name, perm.type, list(perm.ints)) == ("perm", onnx.AttributeProto.INTS, [])
    assert_round_trip(graph)


def test_an_invalid_graph_is_not_exported():
    graph = _graph(Node("n", OpKind.NEG, (Ref("c"),)), Node("s", OpKind.SAVE, (Ref("n"),), attrs=freeze_attrs({"target": "c"})), storage=(f32("c", StorageKind.CONSTANT, (2,)),))
    with pytest.raises(InvariantViolation, match="OWN-3"):
        export_graph(graph)


def test_a_placeholder_is_an_input_and_its_save_an_output_holding_the_exit_value():
    model = export_graph(load_graph(EXAMPLES[[p.stem for p in EXAMPLES].index("read_then_save")]))
    assert {i.name for i in model.graph.input} >= {"A"}
    assert "A.exit" in {o.name for o in model.graph.output}
