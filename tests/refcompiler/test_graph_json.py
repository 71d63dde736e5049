"""``refc-graph/1`` load and dump: round trips, and errors that name the file and the field.

Round trip: for a document in canonical form, load -> dump gives the same
document and reloading gives the same graph; checked on every example and,
as a Hypothesis property, on generated documents (any op, any attribute
values the format allows, every kind of ``init``). The graphs need not be
valid: the format carries invalid graphs too (the verifier's job is separate).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specs import Dtype, OpKind

from refcompiler.errors import InvariantViolation, LimitExceeded, MalformedInput
from refcompiler.files import MAX_NESTING
from refcompiler.verifier import verify
from refcompiler.graph import Init, StorageKind, initial_value
from refcompiler.graph_json import FORMAT, dump_graph, graph_from_doc, graph_to_doc, load_graph, read_json

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
MALFORMED = ROOT / "tests" / "data" / "malformed"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_round_trips(path, tmp_path):
    doc = json.loads(path.read_text())
    graph = load_graph(path)
    assert graph_to_doc(graph) == doc
    out = tmp_path / "again.json"
    dump_graph(graph, out)
    assert json.loads(out.read_text()) == doc
    assert load_graph(out) == graph


def test_round_trip_keeps_extra_top_level_fields():
    doc = {"format": FORMAT, "name": "g", "storage": [], "nodes": [], "expect": {"reject": "OWN-2"}, "found_by": "test"}
    graph = graph_from_doc(doc)
    assert dict(graph.meta) == {"expect": {"reject": "OWN-2"}, "found_by": "test"}
    assert graph_to_doc(graph) == doc


def test_missing_name_defaults_to_the_file_stem(tmp_path):
    path = tmp_path / "my_graph.json"
    path.write_text(json.dumps({"format": FORMAT, "nodes": []}))
    assert load_graph(path).name == "my_graph"


@pytest.mark.parametrize(
    "stem, name",
    [("g\x1b[31m", "g\\x1b[31m"), ("g\udcff", "g\\udcff"), ("n" * 300, "n" * 200)],
)
def test_a_default_name_keeps_the_name_rule(stem, name):
    # a file name with an ESC, or a byte that is not UTF-8 (os.fsdecode's surrogate),
    # became the graph's name as is: printed raw, or a UnicodeEncodeError (exit 4)
    doc = {"format": FORMAT, "storage": [], "nodes": []}
    assert graph_from_doc(doc, path=f"/d/{stem}.json").name == name


@pytest.mark.parametrize("name", ["evil\u202egnp.exe", "two\u2028lines", "zero\u200bwidth", "\ufeffbom"])
def test_a_name_with_a_format_character_is_malformed(name):
    # the schema's pattern refuses control characters only: these printed unseen,
    # reversed the line or broke it in every message naming the graph
    doc = {"format": FORMAT, "name": name, "storage": [], "nodes": []}
    with pytest.raises(MalformedInput, match="g.json: name: the graph's name must be one printable line"):
        graph_from_doc(doc, path="g.json")


def test_result_references_parse():
    doc = json.loads((ROOT / "examples" / "sgd_momentum.json").read_text())
    graph = graph_from_doc(doc)
    save_w = graph.node_by_name["save_w"]
    assert (save_w.inputs[0].name, save_w.inputs[0].index) == ("step", 0)
    assert str(save_w.inputs[0]) == "step:0"


# ------------------------------------------------------------ init values


def storage_doc(dtype: str, shape: list[int], init: dict[str, Any]) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "storage": [{"name": "A", "kind": "placeholder", "dtype": dtype, "shape": shape, "init": init}],
        "nodes": [],
    }


def test_seeded_floats_are_standard_normal_float32():
    graph = graph_from_doc(storage_doc("float32", [2, 3], {"seed": 7}))
    want = np.random.default_rng(7).standard_normal((2, 3)).astype(np.float32)
    got = initial_value(graph.storage[0])
    assert got.dtype == np.float32 and np.array_equal(got, want)


def test_seeded_integers_use_low_and_high():
    graph = graph_from_doc(storage_doc("int32", [50], {"seed": 9, "low": -3, "high": 4}))
    want = np.random.default_rng(9).integers(-3, 4, size=(50,), dtype=np.int32)
    got = initial_value(graph.storage[0])
    assert got.dtype == np.int32 and np.array_equal(got, want)
    assert got.min() >= -3 and got.max() < 4


def test_explicit_value_is_row_major_and_no_init_is_zeros():
    graph = graph_from_doc(storage_doc("float32", [2, 2], {"value": [[1, 2], [3.5, -4]]}))
    np.testing.assert_array_equal(initial_value(graph.storage[0]), np.array([[1, 2], [3.5, -4]], np.float32))
    doc = storage_doc("int32", [3], {"seed": 1})
    del doc["storage"][0]["init"]
    zeros = initial_value(graph_from_doc(doc).storage[0])
    assert zeros.dtype == np.int32 and not zeros.any()


@pytest.mark.parametrize(
    "dtype, init, field",
    [
        ("float32", {"value": [1.0, 2.0]}, "init.value"),
        ("float32", {"value": [[1.0], [2.0], [3.0]]}, "init.value[0]"),
        ("int32", {"value": [1, 2.5, 3]}, "init.value[1]"),
        ("int32", {"value": [1, 2, 2**31]}, "init.value[2]"),
        ("float32", {"seed": 1, "value": [1.0, 2.0, 3.0]}, "init"),
        ("float32", {}, "init"),
        ("float32", {"seed": -1}, "init.seed"),
        ("float32", {"seed": 1, "low": 0, "high": 2}, "init"),
        ("int32", {"seed": 1, "low": 5, "high": 5}, "init"),
        ("float32", {"seed": 1, "mean": 0}, "init"),
        ("float32", [1.0, 2.0, 3.0], "init"),
    ],
)
def test_bad_init_names_the_field(dtype, init, field):
    with pytest.raises(MalformedInput) as info:
        graph_from_doc(storage_doc(dtype, [3], init), path="g.json")
    assert str(info.value).startswith(f"g.json: storage[0] ('A').{field}: ")


@pytest.mark.parametrize(
    "dtype, value, says",
    [
        ("float32", [[1.0, 2.0], [float("nan"), 4.0]], "init.value[1][0]: nan is not a finite float32"),
        ("float32", [[1.0, 1e39], [3.0, 4.0]], "init.value[0][1]: 1e+39 is not a finite float32"),
        ("float32", [[1.0, 2.0], [3.0, 10**400]], "init.value[1][1]: "),  # beyond float64 too
        ("float32", [[1.0, 2.0], [True, float("inf")]], "init.value[1][0]: expected a number element for float32, got a boolean"),
        ("float32", [[1.0, 2.0], [3.0, [4.0]]], "init.value[1][1]: expected a number element for float32, got a list"),
        ("float32", [[1.0, 2.0], [3.0]], "init.value[1]: has 1 elements"),
        ("int32", [[1, 2], [3, 2**31]], "init.value[1][1]: 2147483648 does not fit int32"),
        ("int32", [[1, 2], [10**20, -(2**31) - 1]], "init.value[1][0]: 100000000000000000000 does not fit int32"),  # beyond int64
        ("int32", [[1, False], [3, 4]], "init.value[0][1]: expected an integer element for int32, got a boolean"),
        ("int32", [[1, 2], [3, 4.0]], "init.value[1][1]: expected an integer element for int32, got a number"),
    ],
)
def test_a_bad_element_of_a_value_is_named_by_its_place(dtype, value, says):
    # the elements are checked all at once (a 64 MiB file of values took 16 s
    # to read, one numpy conversion per element); the first bad one is still named
    with pytest.raises(MalformedInput) as info:
        graph_from_doc(storage_doc(dtype, [2, 2], {"value": value}), path="g.json")
    assert str(info.value).startswith(f"g.json: storage[0] ('A').{says}")


def test_values_at_the_edge_of_float32_are_kept_or_refused_as_numpy_rounds_them():
    top = float(np.finfo(np.float32).max)
    kept = graph_from_doc(storage_doc("float32", [3], {"value": [top, -top, 2**128 - 2**104]}))
    assert initial_value(kept.storage[0]).tolist() == [top, -top, top]
    for beyond in (2**128 - 2**103, float(np.nextafter(np.float64(top), np.inf)) * 2):
        with pytest.raises(MalformedInput, match=r"init.value\[2\]: .* is not a finite float32"):
            graph_from_doc(storage_doc("float32", [3], {"value": [1.0, 2.0, beyond]}))


def test_read_json_errors_name_the_file(tmp_path):
    with pytest.raises(MalformedInput, match="no such file"):
        read_json(tmp_path / "absent.json")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(MalformedInput, match="nested too deeply"):
        read_json(deep)
    with pytest.raises(MalformedInput, match="cannot read"):
        read_json(tmp_path)


def _nested_attr_doc(depth: int) -> dict[str, Any]:
    """A graph document whose deepest list is ``depth`` levels down (the top object is level 1)."""
    value: Any = []
    for _ in range(depth - 5):  # the top object, "nodes", the node and its "attrs" are four levels, [] the fifth
        value = [value]
    node = {"name": "r", "op": "relu", "inputs": ["A"], "attrs": {"k": value}}
    return {"format": FORMAT, "storage": [{"name": "A", "kind": "placeholder", "dtype": "float32", "shape": [3]}], "nodes": [node]}


def test_json_nested_past_the_bound_is_refused_before_any_checker_recurses(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text(json.dumps(_nested_attr_doc(MAX_NESTING + 1)))
    with pytest.raises(MalformedInput, match=f"nested more than {MAX_NESTING} lists and objects deep"):
        read_json(deep)
    deep.write_text(json.dumps(_nested_attr_doc(900)))  # json.loads reads it; the schema checks would exhaust the stack
    with pytest.raises(MalformedInput, match="nested more than"):
        load_graph(deep)
    # at the bound: read, and refused by the graph's own rules (relu has no attribute 'k'), not by a crash
    deep.write_text(json.dumps(_nested_attr_doc(MAX_NESTING)))
    with pytest.raises(InvariantViolation, match="unknown attribute 'k'"):
        verify(load_graph(deep))
    bad = _nested_attr_doc(MAX_NESTING)
    inner = bad["nodes"][0]["attrs"]["k"]
    while inner and isinstance(inner[0], list):
        inner = inner[0]
    inner.append({"x": 1})  # an object where attribute values allow none: the jsonschema path, at the bound
    with pytest.raises(MalformedInput, match="expected null or true or false or a number or a string or a list"):
        graph_from_doc(bad, path="g.json")


def test_a_document_built_in_python_nested_past_the_stack_is_malformed_input_not_a_recursion_error():
    with pytest.raises(MalformedInput, match="g.json: nested too deeply to check"):
        graph_from_doc(_nested_attr_doc(5000), path="g.json")


def test_every_malformed_file_is_rejected_by_the_loader():
    files = sorted(MALFORMED.glob("*.json"))
    assert len(files) >= 12
    for path in files:
        with pytest.raises(MalformedInput) as info:
            load_graph(path)
        assert str(info.value).startswith(str(path)), path


# ------------------------------------------------------------ property

NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,5}", fullmatch=True)
# values that survive as finite float32: the loader rejects any that would overflow
FINITE = st.floats(allow_nan=False, allow_infinity=False, width=32)
ATTR_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | FINITE | st.text("abc_", max_size=4),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=6,
)


def _value(draw: st.DrawFn, dtype: Dtype, shape: list[int]) -> Any:
    element = st.integers(-(2**31), 2**31 - 1) if dtype is Dtype.INT32 else FINITE
    if not shape:
        return draw(element)
    return [_value(draw, dtype, shape[1:]) for _ in range(shape[0])]


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    """A canonical refc-graph/1 document whose references all resolve (validity not required)."""
    names = draw(st.lists(NAME, min_size=1, max_size=10, unique=True))
    split = draw(st.integers(0, len(names)))
    storage_names, node_names = names[:split], names[split:]
    storage = []
    for name in storage_names:
        kind = draw(st.sampled_from(StorageKind))
        dtype = draw(st.sampled_from(Dtype))
        shape = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
        s: dict[str, Any] = {"name": name, "kind": kind.value, "dtype": dtype.value, "shape": shape}
        how = draw(st.sampled_from(["none", "seed", "value"]))
        if how == "seed":
            s["init"] = {"seed": draw(st.integers(0, 2**32))}
            if dtype is Dtype.INT32:
                low = draw(st.integers(-100, 100))
                s["init"].update(low=low, high=low + draw(st.integers(1, 100)))
        elif how == "value":
            s["init"] = {"value": _value(draw, dtype, shape)}
        if kind is StorageKind.OWNED and node_names and draw(st.booleans()):
            s["owner"] = draw(st.sampled_from(node_names))
        storage.append(s)
    refs = [*storage_names, *node_names] + [f"{n}:{k}" for n in node_names for k in range(3)]
    nodes = []
    for name in node_names:
        op = draw(st.sampled_from(OpKind))
        n: dict[str, Any] = {"name": name, "op": op.value}
        inputs = draw(st.lists(st.sampled_from(refs), max_size=3))
        if inputs:
            n["inputs"] = inputs
        if storage_names:
            state = draw(st.lists(st.sampled_from(storage_names), max_size=2))
            if state:
                n["state"] = state
        attrs = draw(st.dictionaries(st.from_regex(r"[a-z_]{1,6}", fullmatch=True), ATTR_VALUE, max_size=3))
        if op is OpKind.SAVE:
            if not storage_names:
                op_doc = draw(st.sampled_from([k for k in OpKind if k is not OpKind.SAVE]))
                n["op"] = op_doc.value
            else:
                attrs["target"] = draw(st.sampled_from(storage_names))
        if attrs:
            n["attrs"] = attrs
        nodes.append(n)
    doc: dict[str, Any] = {"format": FORMAT, "name": draw(NAME), "storage": storage, "nodes": nodes}
    if draw(st.booleans()):
        doc["expect"] = "pass"
    return doc


@given(documents())
def test_generated_documents_round_trip(doc):
    graph = graph_from_doc(doc)
    again = graph_to_doc(graph)
    assert again == doc
    reloaded = graph_from_doc(json.loads(json.dumps(again)))
    assert reloaded == graph
    assert graph_to_doc(reloaded) == doc


def test_round_trip_property_catches_a_lossy_dump():
    # the property's comparison is strict enough to see one dropped detail
    doc = {"format": FORMAT, "name": "g", "storage": [{"name": "i", "kind": "placeholder", "dtype": "int32", "shape": [2],
           "init": {"seed": 3, "low": -2, "high": 9}}], "nodes": []}
    graph = graph_from_doc(doc)
    lossy = graph_to_doc(graph)
    del lossy["storage"][0]["init"]["low"]
    assert lossy != doc
    assert graph_from_doc(lossy) != graph
    assert graph.storage[0].init == Init(seed=3, low=-2, high=9)


def test_a_graph_file_refc_would_not_read_back_is_not_written(tmp_path, monkeypatch):
    """dump_graph wrote any size; refc import of a model whose initializers, as JSON
    numbers, passed REFC_MAX_FILE_BYTES wrote a graph file refc check then refused."""
    graph = load_graph(ROOT / "examples" / "sgd_momentum.json")
    size = len((json.dumps(graph_to_doc(graph), indent=1) + "\n").encode())
    monkeypatch.setenv("REFC_MAX_FILE_BYTES", str(size - 1))
    with pytest.raises(LimitExceeded, match=f"needs {size} bytes .* more than the limit {size - 1} \\(REFC_MAX_FILE_BYTES\\)"):
        dump_graph(graph, tmp_path / "g.json")
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("REFC_MAX_FILE_BYTES", str(size))
    dump_graph(graph, tmp_path / "g.json")
    assert load_graph(tmp_path / "g.json") == graph
