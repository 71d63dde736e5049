"""``refc import`` and ``refc export``: the MLP walk-through, agreement with
onnxruntime, and malformed or unsupported models (exit 2, one line, no traceback)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from refcompiler.graph_json import load_graph
from refcompiler.onnx_io.compare import within
from refcompiler.values import load_npz

from tests.cli.inprocess import refc

ROOT = Path(__file__).resolve().parents[2]
MLP = ROOT / "examples" / "onnx" / "mlp.onnx"


def one_line_refusal(capsys, *argv, contains: str) -> str:
    code, out, err = refc(capsys, *argv)
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and contains in err, err
    return err


def write_model(path: Path, nodes, inputs, outputs, initializers=(), opset=13) -> Path:
    graph = helper.make_graph(nodes, "m", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    path.write_bytes(model.SerializeToString())
    return path


def vi(name: str, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def test_the_committed_mlp_is_what_the_script_makes():
    sys.path.insert(0, str(MLP.parent))
    try:
        from make_mlp import make_mlp
    finally:
        sys.path.remove(str(MLP.parent))
    assert make_mlp().SerializeToString() == MLP.read_bytes()


def test_mlp_walk_through(capsys, tmp_path):
    g = tmp_path / "mlp.json"
    assert refc(capsys, "import", MLP, "--dim", "batch=2", "-o", g)[0] == 0
    assert refc(capsys, "check", g)[0] == 0
    assert refc(capsys, "prove", g, "--engine", "both")[0] == 0
    assert refc(capsys, "compile", g, "--pipeline", "O2")[0] == 0
    code, out, err = refc(capsys, "run", g, "--pipeline", "O2", "--out", tmp_path / "y.npz")
    assert code == 0, err
    x = load_npz_input(g)
    want = onnxruntime.InferenceSession(str(MLP), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    ok, ulps = within(load_npz(str(tmp_path / "y.npz"))["y"], want, exact=False)
    assert ok, f"refc run and onnxruntime differ by {ulps} ULP"
    out = tmp_path / "fuzz-out"
    code, _, err = refc(capsys, "fuzz", "--graph", g, "--max-cases", 6, "--workers", 1, "--out", out)
    doc = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert code == 0 and doc["graph"] == str(g) and doc["schedules"] > 0, err


def load_npz_input(graph_path: Path) -> np.ndarray:
    from refcompiler.values import initial_values

    return initial_values(load_graph(graph_path))["x"]


def test_mlp_imported_graph_passes_the_oracle_chain_on_many_schedules():
    # the oracle chain `refc fuzz --graph` runs on each case, here with another batch size
    from fuzz.oracle import check
    from refcompiler.onnx_io.importer import import_file

    graph = import_file(str(MLP), dims={"batch": 3}).graph
    assert check(graph) is None


def test_import_inputs_give_values_and_int64_inputs_become_constants(capsys, tmp_path):
    model = write_model(
        tmp_path / "r.onnx",
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        [vi("x", [2, 3]), vi("shape", [2], TensorProto.INT64)],
        [vi("y", [3, 2])],
    )
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.savez(tmp_path / "in.npz", x=x, shape=np.array([3, -1], dtype=np.int64))
    assert refc(capsys, "import", model, "--inputs", tmp_path / "in.npz", "-o", tmp_path / "r.json")[0] == 0
    code, out, _ = refc(capsys, "run", tmp_path / "r.json", "--reference", "--out", tmp_path / "o.npz")
    assert code == 0 and (load_npz(str(tmp_path / "o.npz"))["y"] == x.reshape(3, 2)).all()


def test_export_then_import_gives_the_same_final_values(capsys, tmp_path):
    example = ROOT / "examples" / "sgd_momentum.json"
    assert refc(capsys, "export", example, "-o", tmp_path / "s.onnx")[0] == 0
    onnx.checker.check_model(onnx.load(str(tmp_path / "s.onnx")), full_check=True)
    assert refc(capsys, "import", tmp_path / "s.onnx", "-o", tmp_path / "s.json")[0] == 0
    assert refc(capsys, "check", tmp_path / "s.json")[0] == 0


def test_export_refuses_an_invalid_graph(capsys, tmp_path):
    code, out, err = refc(capsys, "export", ROOT / "tests" / "data" / "invalid" / "OWN-2.json", "-o", tmp_path / "x.onnx")
    assert code == 1 and "OWN-2" in out and not (tmp_path / "x.onnx").exists()


# -- malformed and unsupported models: one kind per test ----------------------------


def test_truncated_file(capsys, tmp_path):
    data = MLP.read_bytes()
    (tmp_path / "t.onnx").write_bytes(data[: len(data) // 2])
    one_line_refusal(capsys, "import", tmp_path / "t.onnx", contains="t.onnx: not")


def test_not_protobuf(capsys, tmp_path):
    (tmp_path / "n.onnx").write_text("this is not a model\n")
    one_line_refusal(capsys, "import", tmp_path / "n.onnx", contains="n.onnx: not")


def test_empty_and_missing_files(capsys, tmp_path):
    (tmp_path / "e.onnx").write_bytes(b"")
    one_line_refusal(capsys, "import", tmp_path / "e.onnx", contains="the file is empty")
    one_line_refusal(capsys, "import", tmp_path / "missing.onnx", contains="no such file")


def test_unsupported_op(capsys, tmp_path):
    m = write_model(tmp_path / "u.onnx", [helper.make_node("Sigmoid", ["x"], ["y"], name="sig")], [vi("x", [2])], [vi("y", [2])])
    one_line_refusal(capsys, "import", m, contains="node 'sig' (Sigmoid): op Sigmoid is not one refc imports")


def test_unsupported_dtype(capsys, tmp_path):
    m = write_model(tmp_path / "d.onnx", [helper.make_node("Neg", ["x"], ["y"])], [vi("x", [2], TensorProto.DOUBLE)], [vi("y", [2], TensorProto.DOUBLE)])
    one_line_refusal(capsys, "import", m, contains="graph input 'x': dtype float64 is not a refc dtype")


def test_unsupported_dtype_of_a_refc_op(capsys, tmp_path):
    m = write_model(tmp_path / "i.onnx", [helper.make_node("Exp", ["x"], ["y"], name="e")], [vi("x", [2], TensorProto.INT32)], [vi("y", [2], TensorProto.INT32)])
    one_line_refusal(capsys, "import", m, contains="node 'e' (Exp): input 0 is int32; refc's exp takes float32")


def test_zero_dimensional_input(capsys, tmp_path):
    m = write_model(tmp_path / "z.onnx", [helper.make_node("Neg", ["x"], ["y"])], [vi("x", [])], [vi("y", [])])
    one_line_refusal(capsys, "import", m, contains="graph input 'x': is 0-d")


def test_zero_sized_input(capsys, tmp_path):
    m = write_model(tmp_path / "z.onnx", [helper.make_node("Neg", ["x"], ["y"])], [vi("x", [0, 2])], [vi("y", [0, 2])])
    one_line_refusal(capsys, "import", m, contains="zero-sized tensors are not supported")


def test_dynamic_shape_input_needs_dim(capsys, tmp_path):
    one_line_refusal(capsys, "import", MLP, "-o", tmp_path / "m.json", contains="dimension 0 'batch' is dynamic: bind it with --dim batch=SIZE")


def test_a_dim_that_names_no_dynamic_dimension_is_refused_naming_the_ones_there(capsys, tmp_path):
    # a misspelt name was ignored, and the error then said the real one was unbound
    one_line_refusal(capsys, "import", MLP, "--dim", "batch=2", "--dim", "btach=2", "-o", tmp_path / "m.json",
                     contains="--dim 'btach': names no dynamic dimension of the model's inputs or outputs (it has 'batch')")
    assert not (tmp_path / "m.json").exists()


def test_missing_dims(capsys, tmp_path):
    x = vi("x", [2])
    x.type.tensor_type.shape.dim[0].Clear()
    m = write_model(tmp_path / "m.onnx", [helper.make_node("Neg", ["x"], ["y"])], [x], [vi("y", [2])])
    one_line_refusal(capsys, "import", m, contains="dimension 0 has no size")
    no_shape = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)
    m = write_model(tmp_path / "n.onnx", [helper.make_node("Neg", ["x"], ["y"])], [no_shape], [vi("y", [2])])
    assert "shape" in one_line_refusal(capsys, "import", m, contains="not a valid ONNX model")  # onnx.checker's words


def test_shape_input_that_is_not_constant(capsys, tmp_path):
    m = write_model(
        tmp_path / "s.onnx",
        [helper.make_node("Shape", ["x"], ["s"], name="shape"), helper.make_node("Reshape", ["x", "s"], ["y"])],
        [vi("x", [2, 3])],
        [vi("y", [2, 3])],
    )
    one_line_refusal(capsys, "import", m, contains="(Shape): op Shape is not one refc imports")
    m = write_model(tmp_path / "r.onnx", [helper.make_node("Reshape", ["x", "s"], ["y"], name="r")], [vi("x", [2, 3]), vi("s", [2], TensorProto.INT64)], [vi("y", [3, 2])])
    one_line_refusal(capsys, "import", m, contains="graph input 's': dtype int64 is not a refc dtype")


def test_opset_out_of_range(capsys, tmp_path):
    m = write_model(tmp_path / "o.onnx", [helper.make_node("Neg", ["x"], ["y"])], [vi("x", [2])], [vi("y", [2])], opset=6)
    one_line_refusal(capsys, "import", m, contains="opset 6 is outside what refc imports")


def test_bad_dim_flag(capsys):
    code, _, err = refc(capsys, "import", MLP, "--dim", "batch")
    assert code == 2 and "NAME=SIZE" in err


def test_without_the_extra_import_names_the_pip_command(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` now raises ImportError
    err = one_line_refusal(capsys, "import", MLP, contains="pip install -e '.[onnx]'")
    assert "refc import" in err


def test_bench_onnx_prints_the_per_op_table(capsys):
    code, out, err = refc(capsys, "bench", "--onnx")
    assert code == 0, err
    assert "collected" in out and "supported" in out and "passed" in out
    assert "Gemm" in out and "FAILED" not in out and "unsupported (cases, op, reason):" in out


def test_max_of_int32_and_float32_is_refused(capsys, tmp_path):
    node = helper.make_node("Max", ["a", "b"], ["y"], name="mx")
    m = write_model(tmp_path / "mx.onnx", [node], [vi("a", [2], TensorProto.INT32), vi("b", [2])], [vi("y", [2], TensorProto.INT32)])
    one_line_refusal(capsys, "import", m, contains="node 'mx' (Max): input 1 is float32; refc's max takes int32")


def test_the_default_output_never_overwrites_the_input(capsys, tmp_path):
    """A model named m.json imported, a graph named g.onnx exported: the default
    output (the input's path with the other suffix) is the input itself."""
    model = tmp_path / "m.json"
    model.write_bytes(MLP.read_bytes())
    one_line_refusal(capsys, "import", model, "--dim", "batch=2", contains="the output would overwrite the input")
    assert model.read_bytes() == MLP.read_bytes()
    graph = tmp_path / "g.onnx"
    graph.write_text((ROOT / "examples" / "read_then_save.json").read_text())
    one_line_refusal(capsys, "export", graph, contains="the output would overwrite the input")
    assert graph.read_text() == (ROOT / "examples" / "read_then_save.json").read_text()
    assert refc(capsys, "export", graph, "-o", tmp_path / "g2.onnx")[0] == 0


def test_an_output_that_is_the_input_by_a_link_is_refused_before_any_work(capsys, tmp_path):
    graph = tmp_path / "g.json"
    graph.write_text((ROOT / "examples" / "read_then_save.json").read_text())
    (tmp_path / "same.onnx").hardlink_to(graph)
    one_line_refusal(capsys, "export", graph, "-o", tmp_path / "same.onnx", contains="-o names the input")
    assert graph.read_text() == (ROOT / "examples" / "read_then_save.json").read_text()


def test_an_import_refc_could_not_read_back_is_refused_and_nothing_written(capsys, tmp_path, monkeypatch):
    """A 400 kB model's 100,000 initializer values are 2.5 MB of JSON: under a 1 MB
    REFC_MAX_FILE_BYTES the import wrote it, and refc check then refused the file."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal(100_000).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [100_000])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [100_000])], [w])
    model = tmp_path / "big.onnx"
    model.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    monkeypatch.setenv("REFC_MAX_FILE_BYTES", str(1 << 20))
    code, _, err = refc(capsys, "import", model, "-o", tmp_path / "big.json")
    assert code == 2 and "(refc would not read it back)" in err and "REFC_MAX_FILE_BYTES" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "big.json").exists()
