"""The independent statement of the ownership rules agrees with the verifier:
on generated valid graphs, on every edit that breaks an invariant, and on
graphs built to break each rule in each way."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from refcompiler.graph_json import graph_from_doc
from refcompiler.verifier import violations

from fuzz.ownership import OWNERSHIP_RULES, broken_rules
from fuzz.strategies import graphs

from tests.fuzz.edits import EDITS, edited


def _verifier_says(graph):
    return {v.invariant for v in violations(graph)} & OWNERSHIP_RULES


@settings(max_examples=60, database=None)
@given(graphs(max_nodes=8))
def test_a_valid_graph_breaks_no_rule(graph):
    assert broken_rules(graph) == set()


@pytest.mark.parametrize("invariant,edit", EDITS)
def test_it_says_what_the_verifier_says_of_every_edit(invariant, edit):
    @settings(max_examples=12, database=None, suppress_health_check=list(HealthCheck))
    @given(edited(invariant, edit))
    def check(graph):
        assert broken_rules(graph) == _verifier_says(graph)

    check()


def _graph(storage, nodes):
    return graph_from_doc({"format": "refc-graph/1", "name": "g", "storage": storage, "nodes": nodes})


P = {"kind": "placeholder", "dtype": "float32", "shape": [2], "init": {"seed": 1}}


@pytest.mark.parametrize(
    "storage,nodes,rules",
    [
        # OWN-1: no owner; an owner that does not list it
        ([{"name": "x", **P}, {"name": "o", **P, "kind": "owned"}], [], {"OWN-1"}),
        ([{"name": "x", **P}, {"name": "o", **P, "kind": "owned", "owner": "n"}],
         [{"name": "n", "op": "relu", "inputs": ["x"]}], {"OWN-1"}),
        # OWN-2: read by its owner as data; foreign state (second of two); saved into
        ([{"name": "x", **P}, {"name": "o", **P, "kind": "owned", "owner": "a"}],
         [{"name": "a", "op": "accumulate", "inputs": ["x"], "state": ["o"]},
          {"name": "b", "op": "add", "inputs": ["x", "o"]}], {"OWN-2"}),
        ([{"name": "x", **P}, {"name": "o", **P, "kind": "owned", "owner": "a"},
          {"name": "m", **P, "kind": "owned", "owner": "q"}],
         [{"name": "a", "op": "accumulate", "inputs": ["x"], "state": ["o"]},
          {"name": "q", "op": "quantization_profile", "inputs": ["x"], "state": ["m", "o"]}], {"OWN-2"}),
        ([{"name": "x", **P}, {"name": "o", **P, "kind": "owned", "owner": "a"}],
         [{"name": "a", "op": "accumulate", "inputs": ["x"], "state": ["o"]},
          {"name": "s", "op": "save", "inputs": ["x"], "attrs": {"target": "o"}}], {"OWN-2"}),
        # OWN-3: a constant as state, saved into
        ([{"name": "x", **P}, {"name": "c", **P, "kind": "constant"}],
         [{"name": "a", "op": "accumulate", "inputs": ["x"], "state": ["c"]}], {"OWN-3"}),
        ([{"name": "x", **P}, {"name": "c", **P, "kind": "constant"}],
         [{"name": "s", "op": "save", "inputs": ["x"], "attrs": {"target": "c"}}], {"OWN-3"}),
        # OWN-4: a placeholder as state; saved twice
        ([{"name": "x", **P}, {"name": "y", **P}],
         [{"name": "a", "op": "accumulate", "inputs": ["x"], "state": ["y"]}], {"OWN-4"}),
        ([{"name": "x", **P}, {"name": "y", **P}],
         [{"name": "s", "op": "save", "inputs": ["x"], "attrs": {"target": "y"}},
          {"name": "t", "op": "save", "inputs": ["x"], "attrs": {"target": "y"}}], {"OWN-4"}),
        # nothing: an owner with its state, one save, a constant read
        ([{"name": "x", **P}, {"name": "c", **P, "kind": "constant"}, {"name": "o", **P, "kind": "owned", "owner": "a"}],
         [{"name": "a", "op": "accumulate", "inputs": ["c"], "state": ["o"]},
          {"name": "s", "op": "save", "inputs": ["a"], "attrs": {"target": "x"}}], set()),
    ],
)
def test_each_rule_broken_each_way(storage, nodes, rules):
    graph = _graph(storage, nodes)
    assert broken_rules(graph) == rules == _verifier_says(graph)
