"""ONNX's node tests through the importer, the reference and the compiled O2 pipeline.

Prints the per-op table (``pytest -s``); every supported case must pass, and
every unsupported case must carry its reason.
"""

from __future__ import annotations

import dataclasses

import pytest

from refcompiler.onnx_io import conformance
from refcompiler.onnx_io.compare import ULP_BOUND


@pytest.fixture(scope="module")
def results():
    return conformance.run_all()


def test_every_supported_node_test_passes(results):
    failed = [(r.name, r.reason) for r in results if r.status == "failed"]
    assert failed == []


def test_every_unsupported_node_test_has_a_reason(results):
    assert all(r.reason for r in results if r.status == "unsupported")


def test_the_imported_ops_are_covered(results):
    table = {g["op"]: g for g in conformance.table(results)["groups"]}
    for op in ("Add", "Sub", "Mul", "Max", "Relu", "Neg", "Tanh", "Exp", "Identity", "MatMul", "Gemm", "Transpose", "ReduceSum", "Concat", "Reshape"):
        assert table[op]["passed"] >= 1, op
    assert sum(g["supported"] for g in table.values()) >= 85
    assert all(g["max_ulps"] <= ULP_BOUND for g in table.values())
    print()
    print(conformance.render(conformance.table(results)))


def test_max_on_int32_is_supported_and_passes(results):
    """max is in the op table on int32 x int32 too, so ONNX's test_max_int32 runs."""
    (case,) = [r for r in results if r.name == "test_max_int32"]
    assert case.status == "passed", case.reason
    table = {g["op"]: g for g in conformance.table(results)["groups"]}
    assert table["Max"]["supported"] >= 5 and table["Max"]["passed"] == table["Max"]["supported"]


def test_a_wrong_expected_output_fails(results):
    case = next(c for c in conformance.collected() if c.name == "test_add")
    inputs, outputs = case.data_sets[0]
    broken = dataclasses.replace(case, data_sets=[(inputs, [outputs[0] + 1])])
    assert conformance.run_case(broken).status == "failed"
