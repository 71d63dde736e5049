"""Validation over every legal order: each distinct program once, honest coverage."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from refcompiler.driver import compile_graph
from refcompiler.graph_json import load_graph
from refcompiler.ir_text import parse_program, print_program
from refcompiler.mutants import activate
from refcompiler.proofs import Verdict
from refcompiler.proofs.enumerate import all_legal_orders
from refcompiler.symbolic.schedules import _compile_order, canonical_key, canonical_text, validate_all_schedules
from refcompiler.symbolic.validate import scheduled_graph

ROOT = Path(__file__).resolve().parents[3]


def test_every_order_of_an_example_is_proved_and_counted():
    graph = load_graph(ROOT / "examples" / "read_then_save.json")
    orders = list(all_legal_orders(scheduled_graph(compile_graph(graph))))
    result = validate_all_schedules(graph, pipeline="O2")
    assert result.verdict is Verdict.PROVED and result.complete
    assert result.orders == len(orders) and 1 <= result.programs <= len(orders)


def test_a_limit_below_the_number_of_orders_never_claims_all():
    graph = load_graph(ROOT / "examples" / "sgd_momentum.json")
    result = validate_all_schedules(graph, pipeline="O0", limit=3)
    assert result.orders == 3 and not result.enumerated_all and not result.complete
    assert result.verdict is Verdict.INCONCLUSIVE


def test_the_first_failing_order_is_reported():
    case = ROOT / "corpus" / "mutant.share-ignore-later-reads.json"
    graph = load_graph(case)
    with activate("share-ignore-later-reads"):
        result = validate_all_schedules(graph, pipeline="O2")
    assert result.verdict is Verdict.COUNTEREXAMPLE and result.failing is not None and result.failing_order is not None
    assert not result.complete and result.failing.schedule == result.failing_order


def test_compiling_one_order_gives_compile_graphs_program():
    graph = load_graph(ROOT / "examples" / "sgd_momentum.json")
    for pipeline in ("O0", "O2"):
        first = compile_graph(graph, pipeline=pipeline)
        from refcompiler.passes import resolve_pipeline

        for k, order in enumerate(all_legal_orders(scheduled_graph(first), limit=20)):
            mine = _compile_order(first, scheduled_graph(first), order, resolve_pipeline(pipeline))
            theirs = compile_graph(graph, pipeline=pipeline, schedule=order)
            assert print_program(mine.program) == print_program(theirs.program) and mine.schedule == theirs.schedule


def test_canonical_text_ignores_the_schedule_line_and_value_names():
    graph = load_graph(ROOT / "examples" / "embedding_update.json")
    program = compile_graph(graph).program
    text = canonical_text(program)
    assert "schedule" not in text and "%act" not in text and "%v0" in text
    assert canonical_text(program) == text


def _programs_of_every_order(limit: int = 12) -> list:
    out = []
    for path in sorted((ROOT / "examples").glob("*.json")) + sorted((ROOT / "corpus").glob("mutant.*.json"))[:6]:
        graph = load_graph(path)
        first = compile_graph(graph)
        for order in all_legal_orders(scheduled_graph(first), limit=limit):
            out.extend(compile_graph(graph, pipeline=p, schedule=order).program for p in ("O0", "O2"))
    return out


def test_canonical_key_equates_exactly_the_programs_canonical_text_equates():
    programs = _programs_of_every_order()
    texts = [canonical_text(p) for p in programs]
    keys = [canonical_key(p) for p in programs]
    assert len(set(texts)) > 10  # enough distinct programs for the test to tell
    for i in range(len(programs)):
        for j in range(i):
            assert (keys[i] == keys[j]) == (texts[i] == texts[j]), (i, j)


def test_canonical_key_ignores_the_schedule_and_value_names_only():
    program = compile_graph(load_graph(ROOT / "examples" / "embedding_update.json")).program
    renamed = parse_program('program "other"\n' + canonical_text(program).replace("%v", "%w"))
    assert canonical_key(renamed) == canonical_key(replace(program, schedule=(), name="other"))
    moved = replace(program, peak_bytes=(program.peak_bytes or 0) + 4)
    assert canonical_key(moved) != canonical_key(program) and canonical_text(moved) != canonical_text(program)


def test_canonical_key_is_remembered_for_programs_holding_the_same_objects():
    # Another order that compiled alike (the same objects, another schedule)
    # gets the key made for the first; other passes make another key.
    import refcompiler.symbolic.schedules as schedules

    program = compile_graph(load_graph(ROOT / "examples" / "embedding_update.json"), pipeline="O2").program
    key = canonical_key(program)
    assert canonical_key(replace(program, schedule=("another",))) is key == schedules._canonical_key(program)
    other = replace(program, passes=("x",))
    assert canonical_key(other) != key and canonical_key(other) == schedules._canonical_key(other)
