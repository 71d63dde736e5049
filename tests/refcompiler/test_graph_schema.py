"""The published schema of ``refc-graph/1`` and the messages built from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from specs import Dtype, OpKind

from refcompiler.errors import MalformedInput
from refcompiler.graph import StorageKind
from refcompiler.graph_json import graph_from_doc
from refcompiler.graph_schema import SCHEMA_FILE, schema

ROOT = Path(__file__).resolve().parents[2]


def test_the_schema_is_a_valid_json_schema_shipped_in_specs():
    Draft202012Validator.check_schema(schema())
    assert json.loads((ROOT / "specs" / SCHEMA_FILE).read_text()) == schema()


def test_the_schema_enums_are_the_spec_tables():
    defs = schema()["$defs"]
    assert defs["node"]["properties"]["op"]["enum"] == [k.value for k in OpKind]
    assert defs["storage"]["properties"]["dtype"]["enum"] == [d.value for d in Dtype]
    assert defs["storage"]["properties"]["kind"]["enum"] == [k.value for k in StorageKind]
    assert schema()["properties"]["format"]["const"] == "refc-graph/1"


def test_every_example_is_valid_under_the_schema_alone():
    validator = Draft202012Validator(schema())
    for path in sorted((ROOT / "examples").glob("*.json")) + sorted((ROOT / "corpus").glob("*.json")):
        assert list(validator.iter_errors(json.loads(path.read_text()))) == [], path


def doc_with(storage=None, node=None):
    s = {"name": "A", "kind": "placeholder", "dtype": "float32", "shape": [3]} | (storage or {})
    n = {"name": "r", "op": "relu", "inputs": ["A"]} | (node or {})
    return {"format": "refc-graph/1", "storage": [s], "nodes": [n]}


@pytest.mark.parametrize(
    "doc, line",
    [
        (doc_with(storage={"shape": [2.0]}), "storage[0] ('A').shape[0]: expected an integer, got a number"),
        (doc_with(storage={"shape": []}), "storage[0] ('A').shape: a storage shape has 1 to 8 dimensions (rank at most 8)"),
        (doc_with(storage={"name": "a:b"}), "storage[0].name: 'a:b' is not a valid name (letters, digits, _ . -, at most 128; no ':', no spaces or control characters)"),
        (doc_with(storage={"init": {"seed": True}}), "storage[0] ('A').init.seed: expected an integer, got a boolean"),
        (doc_with(storage={"init": {}}), "storage[0] ('A').init: give exactly one of 'seed' and 'value'"),
        (doc_with(node={"inputs": [""]}), "nodes[0] ('r').inputs[0]: '' is not a reference (a name, or name:k with k an ASCII decimal without leading zeros)"),
        (doc_with(node={"attrs": {"k": {"x": 1}}}), "nodes[0] ('r').attrs.k: expected null or true or false or a number or a string or a list, got an object"),
        (doc_with(node={"name": 5}), "nodes[0].name: expected a string, got an integer"),
        # the element before its fields: an unknown field explains a missing one
        (doc_with(node={"extra": 1, "name": 5}), "nodes[0]: unknown field 'extra' (allowed: attrs, inputs, name, op, state)"),
        ({"format": "refc-graph/1"}, "nodes: missing field 'nodes'"),
        ({"format": 1, "nodes": []}, "format: expected a string, got an integer"),
    ],
)
def test_structural_mistakes_are_one_line_naming_path_and_field(doc, line):
    with pytest.raises(MalformedInput) as info:
        graph_from_doc(doc, path="g.json")
    assert str(info.value) == f"g.json: {line}"


def test_the_first_mistake_in_document_order_is_reported():
    doc = doc_with(storage={"dtype": "float64"}, node={"op": "softmax"})
    with pytest.raises(MalformedInput, match=r"storage\[0\] \('A'\)\.dtype: unknown dtype"):
        graph_from_doc(doc, path="g.json")
    doc = {"format": "refc-graph/1", "nodes": [{"name": "r", "op": "softmax"}], "storage": [{"name": "A"}]}
    with pytest.raises(MalformedInput, match=r"nodes\[0\] \('r'\)\.op: unknown op 'softmax'"):
        graph_from_doc(doc, path="g.json")
