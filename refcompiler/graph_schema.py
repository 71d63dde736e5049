"""The structure of a ``refc-graph/1`` document, checked against the published
JSON Schema ``specs/refc-graph-1.schema.json`` with ``jsonschema``.

``check_structure`` raises the first structural mistake, in document order, as
one ``MalformedInput`` line naming the file, the JSON path (with the element's
name where it has one: ``storage[0] ('A').shape[1]``) and what was expected.
What needs the whole graph (references, duplicate names, init values against
their shape and dtype, ownership) is ``refcompiler.graph_json``'s and the
verifier's job.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any, Iterable

import jsonschema
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from refcompiler.errors import MalformedInput
from refcompiler.limits import shown

__all__ = ["SCHEMA_FILE", "schema", "check_structure", "json_type"]

SCHEMA_FILE = "refc-graph-1.schema.json"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,127}")  # the schema's name pattern, used with fullmatch
# Errors at one place are reported in this order (an unknown field explains a missing one).
_RANK = {"type": 0, "additionalProperties": 1, "required": 2}
_TYPE_NAMES = {
    "object": "an object",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


@cache
def schema() -> dict[str, Any]:
    """The published schema (shipped inside the ``specs`` package)."""
    return json.loads(resources.files("specs").joinpath(SCHEMA_FILE).read_text(encoding="utf-8"))


@cache
def _validator() -> Draft202012Validator:
    # JSON Schema calls 1.0 an integer; a dimension or a seed of 1.0 is a mistake here
    checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, v: isinstance(v, int) and not isinstance(v, bool)
    )
    cls = jsonschema.validators.extend(Draft202012Validator, type_checker=checker)
    return cls(schema())


def json_type(value: Any) -> str:
    """How a message names the JSON type of ``value``."""
    if value is None:
        return "null"
    names = {bool: "a boolean", dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number"}
    return names.get(type(value), type(value).__name__)


def check_structure(doc: Any, path: str | None) -> None:
    """Raise the first structural mistake of ``doc`` (see the module docstring)."""
    errors = list(_validator().iter_errors(doc))
    if errors:
        first = min(errors, key=lambda e: (_document_position(doc, e.absolute_path), _RANK.get(e.validator, 3)))
        raise _malformed(doc, first, path)


def _document_position(doc: Any, where: Iterable[Any]) -> tuple[int, ...]:
    """Where ``where`` is in ``doc``, as indices in document order (keys as listed)."""
    out, node = [], doc
    for key in where:
        out.append(list(node).index(key) if isinstance(node, dict) else key)
        node = node[key]
    return tuple(out)


def _label(doc: Any, where: list[Any]) -> str:
    """``storage[0] ('A').shape[1]``: the JSON path, each list element named by its name."""
    text, node = "", doc
    for key in where:
        node = node[key]
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
        name = node.get("name") if isinstance(node, dict) and isinstance(key, int) else None
        if isinstance(name, str) and _NAME.fullmatch(name):
            text += f" ('{name}')"
    return text


def _malformed(doc: Any, e: ValidationError, path: str | None) -> MalformedInput:
    where = list(e.absolute_path)
    if not where and e.validator == "type":
        return MalformedInput(f"the top level must be an object, got {json_type(doc)}", path=path)
    if e.validator == "required":
        missing = next(k for k in e.validator_value if k not in e.instance)
        expected = e.schema["properties"].get(missing, {}).get("const")
        hint = f" (expected {expected!r})" if expected is not None else ""
        # at the top level the field is the missing one itself
        field = _label(doc, where) or missing
        return MalformedInput(f"missing field '{missing}'{hint}", path=path, field=field)
    return MalformedInput(_message(e), path=path, field=_label(doc, where))


def _message(e: ValidationError) -> str:
    """What was expected, for a failure at a known place."""
    key = e.absolute_path[-1] if e.absolute_path else ""
    if e.validator == "type":
        types = e.validator_value if isinstance(e.validator_value, list) else [e.validator_value]
        return f"expected {' or '.join(_TYPE_NAMES[t] for t in types)}, got {json_type(e.instance)}"
    if e.validator == "additionalProperties":
        allowed = ", ".join(sorted(e.schema.get("properties", {})))
        extra = sorted(set(e.instance) - set(e.schema.get("properties", {})))
        return f"unknown field '{extra[0]}' (allowed: {allowed})"
    if e.validator == "enum":
        known = ", ".join(e.validator_value)
        return f"unknown {key} {shown(e.instance)} (known: {known})"
    if e.validator == "const":
        return f"unsupported {key} version {shown(e.instance)} (this refc reads {e.validator_value!r})"
    if "errorMessage" in e.schema:
        return e.schema["errorMessage"].format(value=_Shown(e.instance))
    return e.message


class _Shown:
    """A value from the file as a message shows it (escaped, cut short), with ``{value}`` or ``{value!r}``."""

    def __init__(self, value: Any):
        self.value = value

    def __repr__(self) -> str:
        return shown(self.value)

    __str__ = __repr__
