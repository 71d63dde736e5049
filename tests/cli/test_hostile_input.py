"""Hostile and careless input (issue 11): numbers and names, and a malformed-input
fuzzer over the examples and the corpus.

The fuzzer mutates the files (truncation, type swaps, huge and non-ASCII
numbers, deep nesting, huge shapes, broadcasts that blow up, names with
control characters) and runs ``refc check``, ``run`` and ``replay`` on each
in-process: no traceback, no exit 4, bounded memory. The default suite runs
a bounded sample; ``REFC_HOSTILE_EXAMPLES=5000`` runs a longer job.
"""

from __future__ import annotations

import copy
import json
import os
import random
import resource
from pathlib import Path
from typing import Any

import pytest

from tests.cli.inprocess import refc

ROOT = Path(__file__).resolve().parents[2]
SEEDS = sorted((ROOT / "examples").glob("*.json")) + sorted((ROOT / "corpus").glob("*.json"))
SGD = json.loads((ROOT / "examples" / "sgd_momentum.json").read_text())
EXAMPLES = int(os.environ.get("REFC_HOSTILE_EXAMPLES", "120"))
MEMORY_BOUND_KIB = 3 << 20  # 3 GiB of resident memory at most, for the whole job


def _with(mutate) -> dict[str, Any]:
    doc = copy.deepcopy(SGD)
    mutate(doc)
    return doc


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["nodes"][1]["inputs"].__setitem__(0, "y:\u00b2"), "inputs[0]: 'y:²' is not a reference"),
        (lambda d: d["nodes"][1]["inputs"].__setitem__(0, "y:01"), "inputs[0]: 'y:01' is not a reference"),
        (lambda d: d["nodes"][1]["inputs"].__setitem__(0, "y:0\n"), "inputs[0]: 'y:0\\n' is not a reference"),
        (lambda d: d["storage"][0].__setitem__("name", "x\n"), "storage[0].name: 'x\\n' is not a valid name"),
        (lambda d: d["storage"][0].__setitem__("name", "x\x1b[31m"), "storage[0].name: 'x\\x1b[31m' is not a valid name"),
        (lambda d: d["storage"][0].__setitem__("name", "x" * 129), "is not a valid name"),
        (lambda d: d.__setitem__("name", "g\x1b[2J"), "name: the graph's name must be one printable line"),
        (lambda d: d.__setitem__("name", "g\n"), "name: the graph's name must be one printable line"),
        # a key or a string the file gives, in the message's path or text: escaped, one line
        (lambda d: d["nodes"][4]["attrs"].__setitem__("a\nb\x1b[31m", {"x": 1}), "nodes[4] ('step').attrs['a\\nb\\x1b[31m']: expected null"),
        (lambda d: d["nodes"][4]["attrs"].__setitem__("lr\n", float("nan")), "nodes[4] ('step').attrs['lr\\n']: unsupported value nan"),
        (lambda d: d["storage"][0].__setitem__("extra\n", 1), "storage[0] ('x'): unknown field 'extra\\n'"),
        (lambda d: d["nodes"][5]["attrs"].__setitem__("target", "w\n"), "nodes[5] ('save_w').attrs.target: 'w\\n' names no storage"),
        (lambda d: d["storage"][0].__setitem__("shape", [1] * 10000), "shape: a storage shape has 1 to 8 dimensions"),
        (lambda d: d["storage"][0].__setitem__("shape", [10**400]), "shape[0]: dimension about 10**399 is not in 1..2147483647"),
        (lambda d: d["storage"][0]["init"].__setitem__("seed", 10**400), "init.seed: seed about 10**399 is not in 0..2**63-1"),
        (lambda d: d["storage"][0].__setitem__("init", {"value": [[10**400] * 3] * 4}), "init.value[0][0]: about 10**399 is not a finite float32"),
        (lambda d: d["nodes"][4]["attrs"].__setitem__("lr", 10**400), "nodes[4] ('step').attrs.lr: about 10**399 is not a finite float32"),
        (lambda d: d["nodes"][4]["attrs"].__setitem__("mu", 1e39), "attrs.mu: 1e+39 is not a finite float32"),
        (lambda d: d["nodes"].append({"name": "q", "op": "quantization_profile", "inputs": ["x"], "attrs": {"lo": 10**400}}),
         "nodes[11] ('q').attrs.lo: about 10**399 is not a finite float32"),
        (lambda d: d["nodes"].append({"name": "c", "op": "concat", "inputs": ["x", "x"], "attrs": {"axis": 2**31}}),
         "nodes[11] ('c').attrs.axis: 2147483648 does not fit int32"),
        (lambda d: d["nodes"].append({"name": "c", "op": "reshape", "inputs": ["x"], "attrs": {"shape": [1] * 9 + [12]}}),
         "attrs.shape: a list of 10 numbers; a shape or axis list has at most 8"),
    ],
)
def test_numbers_and_names_out_of_range_are_malformed(tmp_path, capsys, mutate, message):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(_with(mutate)))
    for command in ("check", "run"):
        code, out, err = refc(capsys, command, path)
        assert code == 2, out + err
        assert message in err and len(err.strip().splitlines()) == 1
        assert "\x1b" not in out + err and "\n" not in err.strip()


def test_an_unknown_attribute_with_a_line_break_is_one_escaped_violation(tmp_path, capsys):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(_with(lambda d: d["nodes"][4]["attrs"].__setitem__("k\n\x1b[2J", 1))))
    code, out, err = refc(capsys, "check", path)
    assert code == 1, out + err
    assert "has unknown attribute 'k\\n\\x1b[2J'" in out and len(out.strip().splitlines()) == 1
    assert "\x1b" not in out + err


def test_a_digits_limit_number_is_malformed(tmp_path, capsys):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(SGD).replace('"seed": 11', '"seed": 1' + "0" * 5000))
    code, _, err = refc(capsys, "check", path)
    assert code == 2 and "not a number refc reads" in err


# ---- the fuzzer

_WEIRD = [None, True, False, "", "x", "\u00b2", "a\n", "\x1b[31m", 1.5, -1, 0, 10**400, -(10**400), 1e308, [], {}, [[[]]], {"a": 1},
          "n:01", "n:\u0663", 2**31, 2**63, "nan"]


def _leaves(doc: Any, path: tuple = ()) -> list[tuple]:
    """Every place in ``doc`` (a path of keys and indices), containers too."""
    out = [path]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _leaves(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _leaves(v, path + (i,))
    return out


def _set(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return doc


def _get(doc: Any, path: tuple) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _mutate(rng: random.Random, text: str) -> str:
    """One hostile variant of a graph or case file's text."""
    doc = json.loads(text)
    flavour = rng.randrange(9)
    if flavour == 0:
        return text[: rng.randrange(len(text))]
    place = rng.choice(_leaves(doc))
    if flavour == 1:
        doc = _set(doc, place, rng.choice(_WEIRD))
    elif flavour == 2:
        value = _get(doc, place)
        if isinstance(value, list | dict) and value:
            key = rng.choice(list(value) if isinstance(value, dict) else range(len(value)))
            del value[key]
    elif flavour == 3:
        return json.dumps(_set(doc, place, "@@")).replace('"@@"', "[" * 5000 + "]" * 5000)
    elif flavour == 4 and doc.get("storage"):
        s = rng.choice(doc["storage"])
        s["shape"] = rng.choice([[10**5, 10**5], [1] * 20, [2**31 - 1], [4096, 4097], [0], [-1], [10**400]])
    elif flavour == 5:
        n = rng.choice([10**5, 5000, 2**20])
        doc.setdefault("storage", []).extend([
            {"name": "hx", "kind": "placeholder", "dtype": "float32", "shape": [n, 1]},
            {"name": "hy", "kind": "placeholder", "dtype": "float32", "shape": [1, n]}])
        doc["nodes"] = list(doc.get("nodes", [])) + [{"name": "hxy", "op": rng.choice(["add", "mul", "max", "sub"]), "inputs": ["hx", "hy"]}]
    elif flavour == 6:
        number = rng.choice(["1" + "0" * rng.choice([40, 400, 5000]), "-1e400", "1e-400", "NaN", "Infinity", "\u0661"])
        return text.replace(": 0", ": " + number, 1).replace(":0", ":" + number, 1)
    elif flavour == 7 and doc.get("nodes"):
        node = rng.choice(doc["nodes"])
        key = rng.choice(["name", "op", "inputs", "state", "attrs"])
        node[key] = rng.choice(_WEIRD)
    else:
        value = _get(doc, place)
        if isinstance(value, str):
            doc = _set(doc, place, value + rng.choice(["\n", "\x1b[0m", ":\u00b2", ":01", "\u202e", " "]))
    return json.dumps(doc)


def _hostile_run(tmp_path: Path, capsys: pytest.CaptureFixture[str], n: int, seed: int) -> dict[int, int]:
    rng = random.Random(seed)
    texts = [p.read_text() for p in SEEDS]
    codes: dict[int, int] = {}
    for i in range(n):
        text = _mutate(rng, rng.choice(texts))
        path = tmp_path / f"h{i % 50}.json"
        path.write_text(text)
        command = rng.choice([["check"], ["check"], ["run", "--reference"], ["run", "--pipeline", "O2"], ["replay"]])
        code, out, err = refc(capsys, *command, path)
        assert code in (0, 1, 2), f"{command} on variant {i} (seed {seed}): exit {code}\n{text[:2000]}\n{out}{err}"
        assert "\x1b" not in out + err, f"an escape printed raw for variant {i}"
        codes[code] = codes.get(code, 0) + 1
    return codes


def test_hostile_variants_never_crash(tmp_path, capsys, monkeypatch):
    # tight limits keep the runs small and fast; breaching them is exit 2 like any other
    monkeypatch.setenv("REFC_MAX_ELEMENTS", str(1 << 20))
    monkeypatch.setenv("REFC_MAX_BYTES", str(64 << 20))
    codes = _hostile_run(tmp_path, capsys, EXAMPLES, seed=int(os.environ.get("REFC_HOSTILE_SEED", "11")))
    assert codes.get(2, 0) > EXAMPLES // 3  # most variants are malformed: the mutations do bite
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < MEMORY_BOUND_KIB
