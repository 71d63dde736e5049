"""Write examples/onnx/mlp.onnx: a small MLP (4 -> 8 -> 3) with fixed random weights.

    python3 examples/onnx/make_mlp.py

Layer 1 is a Gemm with transB=1 (how exporters write nn.Linear), then Relu;
layer 2 is MatMul then Add, then Tanh. The batch dimension is dynamic
("batch"): bind it with ``refc import mlp.onnx --dim batch=2``. Deterministic:
the same file every time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make_mlp() -> onnx.ModelProto:
    rng = np.random.default_rng(13)
    w1 = rng.standard_normal((8, 4)).astype(np.float32) * np.float32(0.5)
    b1 = rng.standard_normal(8).astype(np.float32) * np.float32(0.1)
    w2 = rng.standard_normal((8, 3)).astype(np.float32) * np.float32(0.5)
    b2 = rng.standard_normal(3).astype(np.float32) * np.float32(0.1)
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1),
        helper.make_node("Relu", ["h"], ["a"], name="relu1"),
        helper.make_node("MatMul", ["a", "w2"], ["z"], name="fc2"),
        helper.make_node("Add", ["z", "b2"], ["logits"], name="bias2"),
        helper.make_node("Tanh", ["logits"], ["y"], name="act2"),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
        initializer=[numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="refc examples")
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    out = Path(__file__).with_name("mlp.onnx")
    out.write_bytes(make_mlp().SerializeToString())
    print(f"wrote {out}")
