"""A small JSON Schema (draft 2020-12) interpreter for the keywords the host file's schema
uses: ``type``, ``enum``, ``const``, ``oneOf``, ``minLength``, ``maxLength``, ``pattern``
(applied with ``re.fullmatch``), ``format`` (checks the caller passes in), ``minimum``,
``exclusiveMinimum``, ``maximum``, ``items``, ``properties``, ``required``,
``additionalProperties``, ``propertyNames``, ``minProperties``, ``maxProperties``. Pure.

Every refusal is one ConfigError line naming the key path and showing the value escaped
(``_show``). Beyond the schema, no string may hold a control character other than tab and
newline, nor a bidi or line-separator mark (``_UNSAFE_CHAR``).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from vllm_ledger.errors import ConfigError
from vllm_ledger.strictjson import shown_key

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}
_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
}


# Never in a host-file string: control characters but tab and newline (a newline is quoted like
# any other character), and the bidi and line-separator marks that make a terminal show
# something other than what the script holds.
_UNSAFE_CHAR = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def _is_type(value: Any, name: str) -> bool:
    if isinstance(value, bool) and name != "boolean":
        return False
    return isinstance(value, _TYPES[name])


def _show(value: Any) -> str:
    """A value as one safe line: JSON, with anything unprintable (bidi overrides, U+2028, ...)
    escaped as \\uXXXX."""
    text = json.dumps(value, ensure_ascii=False)
    text = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
    return text if len(text) <= 60 else text[:57] + "..."


Format = Callable[[str, dict[str, Any]], str | None]


def validate(
    value: Any,
    schema: dict[str, Any],
    where: str,
    *,
    words: Mapping[str, str] | None = None,
    formats: Mapping[str, Format] | None = None,
) -> None:
    """Raise ConfigError naming ``where`` (the key path) if ``value`` breaks ``schema``.

    ``words``: how a pattern's refusal reads, by pattern (else ``does not match PATTERN``).
    ``formats``: a check per ``format`` value, given the value and its schema, returning what
    is wrong (worded to follow the value) or None; a format not named is not checked."""
    label = where or "host file"
    words = words or {}
    formats = formats or {}

    def inner(item: Any, sub: dict[str, Any], at: str) -> None:
        validate(item, sub, at, words=words, formats=formats)

    def fail(message: str) -> None:
        raise ConfigError(f"{label}: {message}", key=where)

    if "oneOf" in schema:
        matches = 0
        for branch in schema["oneOf"]:
            try:
                inner(value, branch, where)
            except ConfigError:
                continue
            matches += 1
        if matches != 1:
            fail(f"{_show(value)} is not valid: {schema.get('description', '')}".rstrip(": "))
        return
    if "const" in schema and value != schema["const"]:
        fail(f"must be {_show(schema['const'])}")
    if "enum" in schema and (isinstance(value, bool) or value not in schema["enum"]):
        fail(f"{_show(value)} is not one of {', '.join(map(str, schema['enum']))}")
    t = schema.get("type")
    if t is not None and not _is_type(value, t):
        fail(f"must be {_TYPE_WORDS[t]}, not {_show(value)}")
    if isinstance(value, str):
        bad = _UNSAFE_CHAR.search(value)
        if bad is not None:
            c = bad.group()
            fail(
                "contains a NUL character"
                if c == "\x00"
                else f"contains the character U+{ord(c):04X}"
            )
        if len(value) < schema.get("minLength", 0):
            fail("must not be empty")
        check = formats.get(schema.get("format", ""))
        problem = check(value, schema) if check is not None else None
        if problem is not None:
            fail(f"{_show(value)} {problem}")
        if len(value) > schema.get("maxLength", len(value)):
            fail(f"{_show(value)} is {len(value)} characters; at most {schema['maxLength']}")
        pattern = schema.get("pattern")
        if pattern is not None and not re.fullmatch(pattern, value):
            fail(f"{_show(value)} {words.get(pattern, f'does not match {pattern}')}")
    if _is_type(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            fail(f"{_show(value)} is below the minimum {schema['minimum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            fail(f"{_show(value)} must be above {schema['exclusiveMinimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            fail(f"{_show(value)} is above the maximum {schema['maximum']}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            inner(item, schema["items"], f"{where}[{i}]")
    if isinstance(value, dict):
        _validate_object(value, schema, where, fail, inner)


def _validate_object(
    value: dict[str, Any], schema: dict[str, Any], where: str, fail: Any, inner: Any
) -> None:
    props: dict[str, Any] = schema.get("properties", {})
    prefix = f"{where}." if where else ""
    extra = schema.get("additionalProperties", True)
    names = schema.get("propertyNames")
    for key, item in value.items():
        path = f"{prefix}{shown_key(key)}"
        if names is not None:
            inner(key, {"type": "string", **names}, path)
        if key in props:
            inner(item, props[key], path)
        elif extra is False:
            allowed = sorted(k for k in props if not k.startswith("$"))
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"did you mean {close[0]}?" if close else f"allowed: {', '.join(allowed)}"
            if "x-unknown-key-note" in schema:
                hint += f"; {schema['x-unknown-key-note']}"
            raise ConfigError(f"{path}: unknown key ({hint})", key=path)
        elif isinstance(extra, dict):
            inner(item, extra, path)
    for key in schema.get("required", []):
        if key not in value:
            raise ConfigError(f"{prefix}{key}: required", key=f"{prefix}{key}")
    if len(value) < schema.get("minProperties", 0):
        fail(f"needs one of {', '.join(props)}")
    if len(value) > schema.get("maxProperties", len(value)):
        fail(f"give only one of {', '.join(props)}")


__all__ = ["validate"]
