"""The reference interpreter against numpy written by hand (tests/hand_numpy.py), bit for bit.

Besides the examples, one small graph per stateful op pins down the semantics
DESIGN §3 gives it, with values chosen so that a plausible wrong reading of
the contract gives a different answer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from refcompiler.errors import ExecutionError
from refcompiler.graph_json import graph_from_doc, load_graph
from refcompiler.reference import run_reference
from refcompiler.values import same_bits
from refcompiler.verifier import violations
from tests.hand_numpy import EXAMPLES, expected

ROOT = Path(__file__).resolve().parents[2]
F32 = np.float32


def assert_same_values(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert sorted(got) == sorted(want)
    for name in want:
        assert same_bits(got[name], want[name]), f"{name}: got {got[name]!r}, want {want[name]!r}"


def test_every_example_has_a_hand_written_expectation():
    assert sorted(p.stem for p in (ROOT / "examples").glob("*.json")) == sorted(EXAMPLES)


@pytest.mark.parametrize("example", sorted(EXAMPLES))
@pytest.mark.parametrize("runs", [1, 2])
def test_example_matches_numpy_by_hand(example, runs):
    graph = load_graph(ROOT / "examples" / f"{example}.json")
    assert violations(graph) == []
    assert_same_values(run_reference(graph, runs=runs), expected(example, runs))


def test_second_run_differs_from_first():
    # state persists: a run that ignored its entry values would repeat itself
    for example in EXAMPLES:
        graph = load_graph(ROOT / "examples" / f"{example}.json")
        one, two = run_reference(graph, runs=1), run_reference(graph, runs=2)
        assert any(not same_bits(one[k], two[k]) for k in one), example


def test_assert_same_values_catches_one_flipped_bit():
    want = expected("read_then_save", 1)
    got = {k: v.copy() for k, v in want.items()}
    got["A"].view(np.uint32)[0] ^= 1
    with pytest.raises(AssertionError):
        assert_same_values(got, want)


# ------------------------------------------------------------ single ops


def graph(storage: list[dict], nodes: list[dict]) -> object:
    g = graph_from_doc({"format": "refc-graph/1", "name": "t", "storage": storage, "nodes": nodes})
    assert violations(g) == [], violations(g)
    return g


def placeholder(name: str, shape: list[int], value: object = None, dtype: str = "float32") -> dict:
    d: dict = {"name": name, "kind": "placeholder", "dtype": dtype, "shape": shape}
    if value is not None:
        d["init"] = {"value": value}
    return d


def owned(name: str, shape: list[int], owner: str, value: object = None) -> dict:
    d: dict = {"name": name, "kind": "owned", "dtype": "float32", "shape": shape, "owner": owner}
    if value is not None:
        d["init"] = {"value": value}
    return d


def save(name: str, value: str, target: str) -> dict:
    return {"name": name, "op": "save", "inputs": [value], "attrs": {"target": target}}


def embedding_graph(ids: list[int]) -> object:
    n = len(ids)
    return graph(
        [
            placeholder("ids", [n], ids, dtype="int32"),
            placeholder("grad", [n, 2], [[1.0, 10.0]] * n),
            owned("table", [3, 2], "emb", [[0.0, 0.5], [1.0, 1.5], [2.0, 2.5]]),
            placeholder("rows", [n, 2]),
        ],
        [
            {"name": "emb", "op": "embedding_update", "inputs": ["ids", "grad"], "state": ["table"]},
            save("s", "emb", "rows"),
        ],
    )


def test_embedding_lookup_sees_the_table_before_the_update_with_repeated_ids():
    out = run_reference(embedding_graph([1, 1, 0]))
    # rows are the old rows, even for the second occurrence of id 1
    np.testing.assert_array_equal(out["rows"], np.array([[1.0, 1.5], [1.0, 1.5], [0.0, 0.5]], F32))
    # a repeated id adds every one of its gradients (np.add.at, not fancy-index assignment)
    np.testing.assert_array_equal(out["table"], np.array([[1.0, 10.5], [3.0, 21.5], [2.0, 2.5]], F32))


def test_embedding_second_run_looks_up_the_updated_table():
    out = run_reference(embedding_graph([1, 1, 0]), runs=2)
    np.testing.assert_array_equal(out["rows"], np.array([[3.0, 21.5], [3.0, 21.5], [1.0, 10.5]], F32))
    np.testing.assert_array_equal(out["table"], np.array([[2.0, 20.5], [5.0, 41.5], [2.0, 2.5]], F32))


@pytest.mark.parametrize("bad", [3, -1])
def test_embedding_id_out_of_range_is_a_clear_error_naming_node_and_id(bad):
    g = embedding_graph([0, bad])
    with pytest.raises(ExecutionError) as info:
        run_reference(g)
    message = str(info.value)
    assert "'emb'" in message and f"id {bad}" in message and "\n" not in message
    assert info.value.node == "emb"


def profile_graph(x: list[float], lo: float, hi: float, k: int, minmax: list[float]) -> object:
    return graph(
        [
            placeholder("x", [len(x)], x),
            owned("minmax", [2], "prof", minmax),
            owned("hist", [k], "prof"),
        ],
        [{"name": "prof", "op": "quantization_profile", "inputs": ["x"], "state": ["minmax", "hist"], "attrs": {"lo": lo, "hi": hi}}],
    )


def test_quantization_profile_bins_including_clipping():
    # bins of width 0.5 over [-2, 2): edges are exact in binary, so each value's bin is unambiguous
    x = [-10.0, -2.0, -1.75, -0.5, 0.0, 0.49, 0.5, 1.999, 2.0, 7.0]
    out = run_reference(profile_graph(x, -2.0, 2.0, 8, [0.0, 0.0]))
    # -10 clipped and -2 -> bin 0; -0.5 -> 3; 0, 0.49 -> 4; 0.5 -> 5; 1.999, 2 (hi is outside), 7 clipped -> 7
    np.testing.assert_array_equal(out["hist"], np.array([3, 0, 0, 1, 2, 1, 0, 3], F32))
    np.testing.assert_array_equal(out["minmax"], np.array([-10.0, 7.0], F32))


def test_quantization_profile_accumulates_across_runs_and_keeps_running_extremes():
    x = [-1.0, 0.25, 1.0]
    out = run_reference(profile_graph(x, -2.0, 2.0, 4, [-5.0, 0.5]), runs=2)
    # bins of width 1: -1 -> 1, 0.25 -> 2, 1 -> 3; twice
    np.testing.assert_array_equal(out["hist"], np.array([0, 2, 2, 2], F32))
    # the old minimum (-5) is kept; the maximum grows to x's
    np.testing.assert_array_equal(out["minmax"], np.array([-5.0, 1.0], F32))


def accumulate_graph() -> object:
    return graph(
        [placeholder("x", [3], [1.0, 2.0, -0.5]), owned("acc", [3], "running", [10.0, 0.0, 0.0]), placeholder("total", [3])],
        [{"name": "running", "op": "accumulate", "inputs": ["x"], "state": ["acc"]}, save("s", "running", "total")],
    )


@pytest.mark.parametrize("runs", [1, 2, 3])
def test_accumulate_total_is_the_new_acc(runs):
    out = run_reference(accumulate_graph(), runs=runs)
    want = np.array([10.0, 0.0, 0.0], F32) + runs * np.array([1.0, 2.0, -0.5], F32)
    np.testing.assert_array_equal(out["acc"], want)
    assert same_bits(out["total"], out["acc"])


def test_sgd_momentum_updates_v_first_and_w_from_the_new_v():
    g = graph(
        [placeholder("w", [1], [1.0]), placeholder("g", [1], [1.0]), placeholder("v", [1], [1.0])],
        [
            {"name": "step", "op": "sgd_momentum", "inputs": ["w", "g", "v"], "attrs": {"lr": 0.5, "mu": 0.5}},
            save("sw", "step:0", "w"),
            save("sv", "step:1", "v"),
        ],
    )
    out = run_reference(g)
    # v_new = 0.5*1 + 1 = 1.5; w_new = 1 - 0.5*1.5 = 0.25 (with the old v it would be 0.5)
    np.testing.assert_array_equal(out["v"], np.array([1.5], F32))
    np.testing.assert_array_equal(out["w"], np.array([0.25], F32))


def test_add_sub_gives_sum_then_difference():
    g = graph(
        [placeholder("a", [2], [5.0, 1.0]), placeholder("b", [2], [2.0, 3.0]), placeholder("s", [2]), placeholder("d", [2])],
        [
            {"name": "both", "op": "add_sub", "inputs": ["a", "b"]},
            save("save_s", "both:0", "s"),
            save("save_d", "both:1", "d"),
        ],
    )
    out = run_reference(g)
    np.testing.assert_array_equal(out["s"], np.array([7.0, 4.0], F32))
    np.testing.assert_array_equal(out["d"], np.array([3.0, -2.0], F32))


def test_reads_of_a_saved_placeholder_see_its_entry_value():
    # late reads A *after* the save in the listed order, and still sees the old A
    g = graph(
        [placeholder("A", [2], [1.0, 2.0]), placeholder("out", [2])],
        [
            {"name": "n", "op": "neg", "inputs": ["A"]},
            save("s", "n", "A"),
            {"name": "late", "op": "mul", "inputs": ["A", "A"]},
            save("s2", "late", "out"),
        ],
    )
    out = run_reference(g)
    np.testing.assert_array_equal(out["A"], np.array([-1.0, -2.0], F32))
    np.testing.assert_array_equal(out["out"], np.array([1.0, 4.0], F32))


def test_inputs_override_initial_values_and_do_not_alias_the_caller():
    g = accumulate_graph()
    x = np.array([0.5, 0.5, 0.5], F32)
    out = run_reference(g, {"x": x})
    np.testing.assert_array_equal(out["acc"], np.array([10.5, 0.5, 0.5], F32))
    out["x"][0] = 99.0
    assert x[0] == F32(0.5)
