"""The example nightly workflows parse, shard seeds, keep the out directory and
run a refc fuzz command this refc accepts."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from refc.cli import build_parser

EXAMPLES = Path(__file__).resolve().parents[1] / "ci-examples"


def _fuzz_commands(text: str) -> list[list[str]]:
    found = re.findall(r"^\s*(?:- )?(refc fuzz .*)$", text, flags=re.M)
    return [shlex.split(re.sub(r'"[^"]*\$[^"]*"', "X", line)) for line in found]


@pytest.mark.parametrize("name", ["github-nightly.yml", "gitlab-nightly.yml"])
def test_an_example_workflow_is_valid_and_shards_seeds(name):
    text = (EXAMPLES / name).read_text()
    doc = yaml.safe_load(text)
    assert isinstance(doc, dict) and "fuzz-out/" in text
    (command,) = _fuzz_commands(text)
    args = build_parser().parse_args([w if w != "X" else "1" for w in command[1:]])
    assert args.command == "fuzz" and args.budget == 600
    assert "parallel: 4" in text or "shard: [0, 1, 2, 3]" in text
