"""The structure of a ``refc-graph/1`` document, checked against the published
JSON Schema ``specs/refc-graph-1.schema.json`` with ``jsonschema``.

``check_structure`` raises the first structural mistake, in document order, as
one ``MalformedInput`` line naming the file, the JSON path (with the element's
name where it has one: ``storage[0] ('A').shape[1]``) and what was expected.
What needs the whole graph (references, duplicate names, init values against
their shape and dtype, ownership) is ``refcompiler.graph_json``'s and the
verifier's job.

``jsonschema`` takes ~0.33 ms a node (3.3 s for a 10,000-node graph, three times
compiling it at O2), so a document is first checked by ``_conforms`` (0.11 s): the same
schema compiled once into plain closures that answer only valid or not, with
``jsonschema``'s semantics for the keywords the schema uses (a keyword it does
not know is refused when it is built, so the schema cannot outgrow it). Only
a document it refuses goes to ``jsonschema``, whose errors make the message;
tests hold the two to the same verdicts.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Callable, Iterable

from refcompiler.errors import MalformedInput
from refcompiler.limits import key_step, shown

if TYPE_CHECKING:  # jsonschema is imported only for a document to refuse (~90 ms of every command's start)
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

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
    import jsonschema
    from jsonschema import Draft202012Validator

    # JSON Schema calls 1.0 an integer; a dimension or a seed of 1.0 is a mistake here
    checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, v: isinstance(v, int) and not isinstance(v, bool)
    )
    cls = jsonschema.validators.extend(Draft202012Validator, type_checker=checker)
    return cls(schema())


Check = Callable[[Any], bool]

# what ``jsonschema`` means by each type name (``integer`` as ``_validator`` redefines it)
_IS_TYPE: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description", "errorMessage"})


@cache
def _conforms() -> Check:
    """``schema()`` as one check: whether ``jsonschema`` would find no error."""
    return _compiled(schema(), schema(), {})


def _compiled(sub: Any, root: dict[str, Any], refs: dict[str, Check]) -> Check:
    """A check for the subschema ``sub``: every keyword's, all of them to hold.
    ``refs`` memoizes ``$ref`` targets (a check may refer to itself, as
    ``attr_value`` does)."""
    if sub is True or sub == {}:
        return lambda v: True
    if not isinstance(sub, dict):
        raise ValueError(f"unsupported subschema {sub!r}")
    checks = [c for k, v in sub.items() if k not in _ANNOTATIONS and (c := _keyword(k, v, sub, root, refs))]
    if len(checks) == 1:
        return checks[0]

    def every(v: Any) -> bool:
        for c in checks:
            if not c(v):
                return False
        return True

    return every


def _keyword(key: str, value: Any, sub: dict[str, Any], root: dict[str, Any], refs: dict[str, Check]) -> Check | None:
    """The check of one keyword of ``sub`` (``None``: checked with another)."""
    if key == "$ref":
        return _ref(value, root, refs)
    if key == "type":
        tests = [_IS_TYPE[t] for t in ([value] if isinstance(value, str) else value)]
        return tests[0] if len(tests) == 1 else lambda v: any(t(v) for t in tests)
    if key in ("enum", "const"):
        allowed = frozenset([value] if key == "const" else value)
        if not all(isinstance(a, str) for a in allowed):
            raise ValueError(f"unsupported {key} {value!r}: strings only")
        return lambda v: isinstance(v, str) and v in allowed
    if key in ("minimum", "maximum"):
        number, bound = _IS_TYPE["number"], value
        if key == "minimum":  # as jsonschema compares: NaN is within any bound
            return lambda v: not number(v) or not v < bound
        return lambda v: not number(v) or not v > bound
    if key == "maxLength":
        return lambda v: not isinstance(v, str) or len(v) <= value
    if key == "pattern":
        search = re.compile(value).search
        return lambda v: not isinstance(v, str) or search(v) is not None
    if key in ("minItems", "maxItems"):
        if key == "minItems":
            return lambda v: not isinstance(v, list) or len(v) >= value
        return lambda v: not isinstance(v, list) or len(v) <= value
    if key == "items":
        item = _compiled(value, root, refs)

        def items(v: Any) -> bool:
            if isinstance(v, list):
                for x in v:
                    if not item(x):
                        return False
            return True

        return items
    if key == "required":
        return lambda v: not isinstance(v, dict) or all(k in v for k in value)
    if key == "properties":
        return _fields(value, sub.get("additionalProperties", True), root, refs)
    if key == "additionalProperties":
        return None if "properties" in sub else _fields({}, value, root, refs)
    if key == "oneOf":
        options = [_compiled(s, root, refs) for s in value]
        return lambda v: sum(1 for o in options if o(v)) == 1
    raise ValueError(f"unsupported schema keyword {key!r}")


def _fields(properties: dict[str, Any], other: Any, root: dict[str, Any], refs: dict[str, Check]) -> Check:
    """``properties`` and ``additionalProperties`` (``other``) as one pass over an object's fields."""
    props = {k: _compiled(s, root, refs) for k, s in properties.items()}
    rest = _compiled(other, root, refs) if other is not False else (lambda v: False)

    def fields(v: Any) -> bool:
        if isinstance(v, dict):
            for k, x in v.items():
                if not props.get(k, rest)(x):
                    return False
        return True

    return fields


def _ref(target: str, root: dict[str, Any], refs: dict[str, Check]) -> Check:
    """The check of a local reference ``#/$defs/x``, made once."""
    if target not in refs:
        if not target.startswith("#/"):
            raise ValueError(f"unsupported $ref {target!r}: local ones only")
        sub: Any = root
        for part in target[2:].split("/"):
            sub = sub[part]
        made: list[Check] = []
        refs[target] = lambda v: made[0](v)  # a reference inside the target reaches it through ``made``
        made.append(_compiled(sub, root, refs))
    return refs[target]


def json_type(value: Any) -> str:
    """How a message names the JSON type of ``value``."""
    if value is None:
        return "null"
    names = {bool: "a boolean", dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number"}
    return names.get(type(value), type(value).__name__)


def check_structure(doc: Any, path: str | None) -> None:
    """Raise the first structural mistake of ``doc`` (see the module docstring).
    Both checks recurse once per level: a file nests at most
    ``files.MAX_NESTING`` deep, but a document built in Python may nest deeper."""
    try:
        if _conforms()(doc):
            return
        errors = list(_validator().iter_errors(doc))
    except RecursionError:
        raise MalformedInput("nested too deeply to check (lists and objects hundreds of levels deep)", path=path) from None
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
        step = f"[{key}]" if isinstance(key, int) else key_step(key)
        text += step if text else step.removeprefix(".")
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
        return f"unknown field {shown(extra[0])} (allowed: {allowed})"
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
