"""The published schema of ``refc-graph/1`` and the messages built from it."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from specs import Dtype, OpKind

from refcompiler.errors import MalformedInput
from refcompiler.graph import StorageKind
from refcompiler.graph_json import graph_from_doc, graph_to_doc
from refcompiler.graph_schema import SCHEMA_FILE, _compiled, _conforms, _validator, schema
from refcompiler.proofs.scale import large_graph

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DOCS = [json.loads(p.read_text()) for p in sorted((ROOT / "examples").glob("*.json"))] + [
    graph_to_doc(large_graph(60, seed=1))
]
ENUM_VALUES = [k.value for k in OpKind] + [d.value for d in Dtype] + [k.value for k in StorageKind] + ["refc-graph/1"]
FIELD_NAMES = ["format", "name", "storage", "nodes", "kind", "dtype", "shape", "init", "owner", "seed", "low", "high"]
FIELD_NAMES += ["value", "op", "inputs", "state", "attrs", "extra"]


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


# ``check_structure`` asks ``_conforms`` first and ``jsonschema`` only for a document it
# refuses: a document it passes that ``jsonschema`` would refuse is a mistake never reported.
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.sampled_from([0, 1, -1, 2, 8, 9, 2**31 - 1, 2**31, 2**63 - 1, 2**63, -(2**31), -(2**31) - 1])
    | st.sampled_from([1.0, 2.0, 0.5, -0.0, float("nan"), float("inf")])
    | st.sampled_from(["", "A", "r", "a:b", "r:1", "r:01", "x\n", "x y", "é", "\x07", *ENUM_VALUES])
    | st.sampled_from(["A" * 128, "A" * 129, "n" * 140, "n" * 141, "g" * 200, "g" * 201])
    | st.sampled_from([[], [1], [1] * 8, [1] * 9, [1.0], [0], [True], {}, {"seed": 1}, {"seed": 1, "value": 1}, {"value": []}])
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELD_NAMES) | st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)


def _paths(doc, at=()):
    yield at
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*at, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*at, i))


BOUNDS = [0, 1, 8, 9, 128, 129, 140, 141, 200, 201, 2**31 - 1, 2**31, 2**63 - 1, 2**63, -(2**31), -(2**31) - 1]


def _near(draw, value):
    """``value`` changed a little: a number or a length to either side of a bound the
    schema sets, an integer as a float, a line break, a list element repeated or a
    field dropped or borrowed, so that the document is often still valid."""
    if isinstance(value, bool) or value is None:
        return draw(JSON_VALUES)
    if isinstance(value, int):
        n = draw(st.sampled_from(BOUNDS + [value - 1, value + 1, -value]))
        return float(n) if draw(st.integers(0, 4)) == 0 else n
    if isinstance(value, str):
        length = draw(st.sampled_from([0, 1, 127, 128, 129, 139, 140, 141, 199, 200, 201]))
        return draw(st.sampled_from([(value or "A") * length, value[:length], value + "\n", value + ":1", value + ":01"]))
    if isinstance(value, list):
        if not value:
            return draw(JSON_VALUES)
        return draw(st.sampled_from([[], value[:-1], value + value[-1:], value + value[-1:] * (9 - len(value))]))
    if isinstance(value, dict):
        out = dict(value)
        if out and draw(st.booleans()):
            del out[draw(st.sampled_from(sorted(out)))]
        else:
            out[draw(st.sampled_from(FIELD_NAMES))] = draw(JSON_VALUES)
        return out
    return draw(JSON_VALUES)


@st.composite
def mutated_docs(draw):
    """A sample document with one or two values nearly or wholly replaced, or a field dropped or added."""
    doc = copy.deepcopy(draw(st.sampled_from(SAMPLE_DOCS)))
    for _ in range(draw(st.sampled_from([1, 1, 1, 2]))):  # mostly one change: the verdict hangs on it
        at = draw(st.sampled_from(list(_paths(doc))))
        if not at:
            doc = draw(JSON_VALUES) if draw(st.integers(0, 9)) == 0 else doc
            continue
        parent = doc
        for key in at[:-1]:
            parent = parent[key]
        how = draw(st.sampled_from(["near", "near", "near", "replace", "delete"]))
        if how == "near":
            parent[at[-1]] = _near(draw, parent[at[-1]])
        elif how == "replace":
            parent[at[-1]] = draw(JSON_VALUES)
        else:
            del parent[at[-1]]
    return doc


@settings(max_examples=400, deadline=None)
@given(mutated_docs())
def test_the_fast_check_gives_jsonschemas_verdict(doc):
    assert _conforms()(doc) == _validator().is_valid(doc)


def _top(**fields):
    return {"format": "refc-graph/1", "nodes": []} | fields


@pytest.mark.parametrize(
    "doc",
    [  # each bound the schema sets, from either side
        *(doc_with(storage={"shape": shape}) for shape in ([2**31 - 1], [2**31], [0], [1] * 8, [1] * 9, [], [2.0], [True])),
        *(doc_with(storage={"init": {"seed": seed}}) for seed in (0, -1, 2**63 - 1, 2**63, 1.0)),
        *(doc_with(storage={"init": {"seed": 1, "low": low}}) for low in (-(2**31), -(2**31) - 1, 2**31 - 1, 2**31)),
        *(doc_with(storage={"init": {"seed": 1, "high": high}}) for high in (-(2**31), -(2**31) - 1, 2**31, 2**31 + 1)),
        *(doc_with(storage={"init": init}) for init in ({}, {"value": [1, 2, 3]}, {"seed": 1, "value": [1, 2, 3]}, {"low": 0}, [])),
        *(doc_with(storage={"name": name}) for name in ("A" * 128, "A" * 129, "a\n", "a b", "1a", "_a.b-c")),
        *(doc_with(storage={"kind": kind}) for kind in ("owned", "Owned", 1)),
        doc_with(storage={"owner": "r"}),
        doc_with(storage={"owner": "r:1"}),
        *(doc_with(node={"inputs": [ref]}) for ref in ("A" * 140, "A" * 141, "r:1", "r:01", "r:", "r:1\n", 1)),
        *(doc_with(node={"op": op}) for op in ("softmax", "save", None)),
        *(doc_with(node={"state": state}) for state in ([], ["A"], ["A:1"], "A")),
        *(doc_with(node={"attrs": attrs}) for attrs in ({"k": [1, [2.5, None, True, "s"]]}, {"k": {"x": 1}}, {"k": [{}]}, [])),
        doc_with(node={"extra": 1}),
        doc_with(storage={"extra": 1}),
        *(_top(name=name) for name in ("g" * 200, "g" * 201, "g\x07", "g\x85", "g\n", "\n", "g\ng", "", 5)),
        _top(format="refc-graph/2"),
        _top(extra={"anything": [1]}),
        _top(storage={}),
        {"nodes": []},
        {"format": "refc-graph/1", "nodes": [{"op": "relu"}]},
        [],
    ],
)
def test_the_fast_check_gives_jsonschemas_verdict_at_each_bound(doc):
    assert _conforms()(doc) == _validator().is_valid(doc)


def test_every_sample_document_conforms():
    assert all(_conforms()(d) for d in SAMPLE_DOCS)


@pytest.mark.parametrize(
    "keyword", [{"uniqueItems": True}, {"patternProperties": {"x": {}}}, {"$ref": "other.json"}, {"enum": [1]}]
)
def test_the_fast_check_refuses_a_schema_keyword_it_does_not_implement(keyword):
    with pytest.raises(ValueError, match="unsupported"):
        _compiled({"type": "array", **keyword}, {}, {})
