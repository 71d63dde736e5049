"""The importer, op by op, on models the node tests do not cover (older opsets,
attribute corners), checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from refcompiler.errors import MalformedInput
from refcompiler.onnx_io.importer import import_model
from refcompiler.reference import run_reference

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7


def model(node, inputs, output_shape, *, opset=13, initializers=()):
    graph = helper.make_graph(
        [node], "m", [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)], initializer=list(initializers),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def run(m, **inputs):
    imported = import_model(m)
    values = run_reference(imported.graph, {imported.inputs[k]: v for k, v in inputs.items()})
    return values[imported.outputs["y"]]


def test_reduce_sum_axes_attribute_before_opset_13():
    m = model(helper.make_node("ReduceSum", ["x"], ["y"], axes=[0, -1], keepdims=0), [("x", X)], [3], opset=11)
    assert (run(m, x=X) == X.sum(axis=(0, 2), dtype=np.float32)).all()


def test_reduce_sum_noop_with_empty_axes_is_identity():
    m = model(helper.make_node("ReduceSum", ["x"], ["y"], noop_with_empty_axes=1), [("x", X)], list(X.shape))
    assert (run(m, x=X) == X).all()


def test_max_of_three_is_a_chain():
    m = model(helper.make_node("Max", ["a", "b", "c"], ["y"]), [("a", X), ("b", -X), ("c", X[0])], list(X.shape))
    assert (run(m, a=X, b=-X, c=X[0]) == np.maximum(np.maximum(X, -X), X[0])).all()


def test_reshape_zero_copies_a_dimension_and_minus_one_is_inferred():
    shape = numpy_helper.from_array(np.array([0, -1], dtype=np.int64), "s")
    m = model(helper.make_node("Reshape", ["x", "s"], ["y"]), [("x", X)], [2, 12], initializers=[shape])
    assert run(m, x=X).shape == (2, 12)


def test_reshape_allowzero_with_a_zero_is_refused():
    shape = numpy_helper.from_array(np.array([0, -1], dtype=np.int64), "s")
    m = model(helper.make_node("Reshape", ["x", "s"], ["y"], allowzero=1), [("x", X)], [2, 12], opset=14, initializers=[shape])
    with pytest.raises(MalformedInput, match="allowzero=1 is zero-sized"):
        import_model(m)


def test_cast_to_the_same_type_is_identity_and_to_another_is_refused():
    m = model(helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT), [("x", X)], list(X.shape))
    assert (run(m, x=X) == X).all()
    m = model(helper.make_node("Cast", ["x"], ["y"], to=TensorProto.DOUBLE, name="c"), [("x", X)], list(X.shape))
    with pytest.raises(MalformedInput, match=r"node 'c' \(Cast\): Cast from float32 to float64"):
        import_model(m)


def test_gemm_alpha_beta_and_transposes():
    a, b, c = X[0], X[1], np.ones((3, 1), np.float32)
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=0.5, beta=2.0, transB=1)
    m = model(node, [("a", a), ("b", b), ("c", c)], [3, 3])
    want = (a @ b.T) * np.float32(0.5) + c * np.float32(2.0)
    assert (run(m, a=a, b=b, c=c) == want).all()


def _const(name: str, array: np.ndarray) -> TensorProto:
    return numpy_helper.from_array(array, name)


@pytest.mark.parametrize("m, says", [
    # a float axes [0.5] was imported as axis 0; float or 2-d shapes were taken as ints
    (model(helper.make_node("ReduceSum", ["x", "ax"], ["y"]), [("x", X)], [3, 4], initializers=[_const("ax", np.array([0.5], np.float32))]),
     r"its axes \(input 1\) is float32\[1\]; ONNX has it a 1-d int64 tensor"),
    (model(helper.make_node("Reshape", ["x", "s"], ["y"]), [("x", X)], [24], initializers=[_const("s", np.array([24], np.int32))]),
     r"its shape \(input 1\) is int32\[1\]"),
    (model(helper.make_node("Reshape", ["x", "s"], ["y"]), [("x", X)], [24], initializers=[_const("s", np.array([[24]], np.int64))]),
     r"its shape \(input 1\) is int64\[1, 1\]"),
    # beta=0 ignored a C that does not broadcast; ONNX asks it of C whatever beta is
    (model(helper.make_node("Gemm", ["a", "b", "c"], ["y"], beta=0.0), [("a", X[0]), ("b", X[1].T), ("c", np.ones((7, 7), np.float32))], [3, 3]),
     r"C \[7, 7\] does not broadcast to the shape of A @ B, \[3, 3\]"),
    (model(helper.make_node("Constant", [], ["y"], value_float=1.0, value_int=2), [], [1]),
     r"a Constant has exactly one value attribute, this one value_float, value_int"),
])
def test_inputs_and_attributes_onnx_does_not_allow_are_refused(m, says):
    with pytest.raises(MalformedInput, match=says):
        import_model(m)


def test_a_zero_d_constant_beside_a_tensor_broadcasts():
    k = numpy_helper.from_array(np.array(3.0, dtype=np.float32), "k")
    m = model(helper.make_node("Mul", ["x", "k"], ["y"]), [("x", X)], list(X.shape), initializers=[k])
    assert (run(m, x=X) == X * np.float32(3)).all()


def test_a_constant_node_becomes_a_constant():
    const = helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.full(4, 2.0, np.float32)))
    graph = helper.make_graph(
        [const, helper.make_node("Add", ["x", "k"], ["y"])], "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, X.shape)], [helper.make_tensor_value_info("y", TensorProto.FLOAT, X.shape)],
    )
    imported = import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    assert [s.kind.value for s in imported.graph.storage].count("constant") == 1


def test_max_of_int32_inputs_is_int32_max():
    i32 = np.iinfo(np.int32)
    a = np.array([[i32.min, -1, 7], [0, i32.max, -3]], dtype=np.int32)
    b = np.array([5, -2, 7], dtype=np.int32)
    c = np.array([[-9], [1]], dtype=np.int32)
    graph = helper.make_graph(
        [helper.make_node("Max", ["a", "b", "c"], ["y"])], "m",
        [helper.make_tensor_value_info(n, TensorProto.INT32, x.shape) for n, x in (("a", a), ("b", b), ("c", c))],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [2, 3])],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    got = run(m, a=a, b=b, c=c)
    assert got.dtype == np.int32 and (got == np.maximum(np.maximum(a, b), c)).all()
    assert [n.op.value for n in import_model(m).graph.nodes].count("max") == 2


def test_a_model_file_is_read_bounded_not_by_its_stated_size(tmp_path, monkeypatch):
    import os

    from refcompiler import files
    from refcompiler.errors import LimitExceeded
    from refcompiler.onnx_io.importer import load_model

    monkeypatch.setenv("REFC_MAX_FILE_BYTES", "4096")
    with pytest.raises(LimitExceeded, match="/dev/zero: more than the limit of 4096 bytes"):
        load_model("/dev/zero")  # stat says 0 bytes; reading it all would never end
    fifo = tmp_path / "m.onnx"
    os.mkfifo(fifo)
    monkeypatch.setattr(files, "FIFO_SECONDS", 0.2)
    with pytest.raises(MalformedInput, match="a named pipe no one wrote to"):
        load_model(fifo)


def _external(name: str, location: str) -> TensorProto:
    """A float32[4] tensor whose data is in the file ``location``."""
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[4], data_location=TensorProto.EXTERNAL)
    t.external_data.add(key="location", value=location)
    return t


@pytest.mark.parametrize("where", ["constant", "initializer", "subgraph"])
def test_external_data_is_refused_without_reading_the_file(tmp_path, monkeypatch, where):
    # a Constant's external value was read through numpy_helper.to_array, from the
    # current directory: the file's bytes became a constant of the written graph
    from refcompiler.onnx_io.importer import load_model

    (tmp_path / "secret.bin").write_bytes(b"SECRET-DATA-1234")
    monkeypatch.chdir(tmp_path)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    constant = helper.make_node("Constant", [], ["c"], value=_external("c", "secret.bin"))
    inits = [_external("c", "secret.bin")] if where == "initializer" else []
    nodes = [constant] if where == "constant" else []
    if where == "subgraph":
        out = helper.make_tensor_value_info("c", TensorProto.FLOAT, [4])
        branch = helper.make_graph([constant], "b", [], [out])
        cond = numpy_helper.from_array(np.array(True), "cond")
        inits = [cond]
        nodes = [helper.make_node("If", ["cond"], ["c"], then_branch=branch, else_branch=branch)]
    graph = helper.make_graph([*nodes, helper.make_node("Add", ["x", "c"], ["y"])], "m", [x], [y], initializer=inits)
    path = tmp_path / "m.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    opened = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda f, *a, **k: opened.append(str(f)) or real_open(f, *a, **k))
    with pytest.raises(MalformedInput, match="keeps its data in another file; refc reads only the model file"):
        load_model(path)
    assert not any("secret" in f for f in opened)


@pytest.mark.parametrize(
    "tensor, says",
    [
        (TensorProto(name="c", data_type=TensorProto.FLOAT, dims=[4], raw_data=bytes(17)), "buffer size must be a multiple"),
        (TensorProto(name="c", data_type=TensorProto.FLOAT, dims=[4], float_data=[1, 2, 3, 4, 5]), "cannot reshape"),
    ],
)
@pytest.mark.parametrize("as_constant", [True, False])
def test_tensor_data_that_does_not_fill_its_shape_is_refused(tensor, says, as_constant):
    # numpy_helper.to_array raised ValueError: exit 4, a traceback
    x = np.zeros(4, np.float32)
    if as_constant:
        node = helper.make_node("Constant", [], ["c"], value=tensor)
        graph = helper.make_graph([node, helper.make_node("Add", ["x", "c"], ["y"])], "m",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    else:
        m = model(helper.make_node("Add", ["x", "c"], ["y"]), [("x", x)], [4], initializers=[tensor])
    with pytest.raises(MalformedInput, match=f"its data does not match its type and shape \\[4\\]: {says}"):
        import_model(m)


@pytest.mark.parametrize("shape, says", [([-5], r"has shape \[-5\]: each dimension must be in 1..2147483647"),
                                         ([1] * 9, "has rank 9; refc shapes have at most 8 dimensions")])
def test_a_shape_a_graph_file_cannot_hold_is_refused(shape, says):
    # imported and written before: a graph file refc itself then refused to read
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "m",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(MalformedInput, match=f"graph input 'x': {says}"):
        import_model(m)


def _relu(inputs: list[str], outputs: list[str], x: str = "x", shape: tuple[int, ...] = (2,), out_shape: tuple[int, ...] = (2,), nodes=None, inits=()):
    graph = helper.make_graph(nodes or [helper.make_node("Relu", [x], ["y"])], "m",
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in inputs],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, out_shape) for n in outputs], initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("m, says", [
    (_relu(["x" * 300], ["y"], x="x" * 300), r"storage\[0\].name: .* \(300 characters\) is not a valid name"),
    (_relu(["x"], ["y", "y"]), r"duplicate name 'y.1'"),
    (_relu(["x"], ["y"], shape=(6,), out_shape=(1,) * 9 + (6,), nodes=[helper.make_node("Reshape", ["x", "s"], ["y"])],
           inits=[numpy_helper.from_array(np.array([1] * 9 + [6], np.int64), "s")]), r"a storage shape has 1 to 8 dimensions"),
])
def test_a_model_that_makes_no_valid_graph_file_is_refused_not_written(m, says):
    # each was written, exit 0, and refc check then refused the file
    with pytest.raises(MalformedInput, match=f"the model: makes no valid refc graph: .*{says}"):
        import_model(m)


def test_names_from_the_model_and_its_file_are_shown_escaped(tmp_path):
    # a node's name went into a refusal raw (an ESC reached the terminal); a file or
    # graph name with a control character or a non-UTF-8 byte became the graph's name,
    # and the graph file written was one refc then refused to read
    import os

    from refcompiler.graph_json import graph_to_doc, load_graph, write_json_atomic
    from refcompiler.onnx_io.importer import import_file

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    unsupported = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["y"], name="n\x1b[31m")], "m", [x], [y])
    with pytest.raises(MalformedInput) as e:
        import_model(helper.make_model(unsupported, opset_imports=[helper.make_opsetid("", 13)]))
    assert "\x1b" not in str(e.value) and "node 'n\\x1b[31m' (Sigmoid)" in str(e.value)
    relu = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g\x1b[2J", [x], [y])
    m = helper.make_model(relu, opset_imports=[helper.make_opsetid("", 13)])
    assert import_model(m).graph.name == "g\\x1b[2J"
    path = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"m\xff.onnx"))
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    graph = import_file(path).graph
    assert graph.name == "m\\udcff"
    write_json_atomic(tmp_path / "g.json", graph_to_doc(graph))
    assert load_graph(tmp_path / "g.json").name == "m\\udcff"


def test_a_model_making_more_nodes_than_the_limit_names_its_file(monkeypatch):
    from refcompiler.errors import LimitExceeded

    monkeypatch.setenv("REFC_MAX_NODES", "2")
    m = model(helper.make_node("Relu", ["x"], ["y"]), [("x", X)], X.shape)
    with pytest.raises(LimitExceeded, match=r"^big\.onnx: needs 4 nodes and storage entries"):
        import_model(m, path="big.onnx")


def test_what_onnx_checker_quotes_of_a_model_is_shown_escaped(tmp_path):
    # "No opset import for domain 'evil.<ESC>[31m'": the checker's complaint went out raw
    from refcompiler.onnx_io.importer import load_model

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    node = helper.make_node("Frobnicate", ["x"], ["y"], domain="evil.\x1b[31m")
    path = tmp_path / "m.onnx"
    path.write_bytes(helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    with pytest.raises(MalformedInput, match="not a valid ONNX model") as e:
        load_model(path)
    assert "\x1b" not in str(e.value) and "evil.\\x1b[31m" in str(e.value)
