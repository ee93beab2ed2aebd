"""JSON Schema checks through the ``jsonschema`` library (the draft the schema declares, else
2020-12), each refusal one ConfigError line naming the key path and showing the value escaped
(``_show``).

Four keywords read as the host file's schema means them: ``pattern`` describes the whole value
(``re.fullmatch``), ``format`` is checked by the caller's checks (given the value and its
schema), ``integer`` and ``number`` hold no float that is whole nor any bool, and beyond the
schema no string may hold a control character other than tab and newline, nor a bidi or
line-separator mark (``_UNSAFE_CHAR``; a property name included).

Where a value breaks several keywords, the refusal is the first in document order, each value
checked before the values it holds (``_position``), so one file always gets the same line.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from vllm_ledger.errors import ConfigError, MissingExtra
from vllm_ledger.strictjson import shown_key

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
# The refusal for an unsafe character: a keyword of its own, found by the ``type`` keyword.
SAFE_TEXT = "safe-text"

# The order a value's own keywords are judged in; then the values it holds (in document order:
# a property's name before its value); then the keywords about an object's keys as a whole.
_OWN_KEYWORDS = (
    "oneOf",
    "const",
    "enum",
    "type",
    SAFE_TEXT,
    "minLength",
    "format",
    "maxLength",
    "pattern",
    "minimum",
    "exclusiveMinimum",
    "maximum",
)
_KEYS_KEYWORDS = ("required", "minProperties", "maxProperties")

Format = Callable[[str, dict[str, Any]], str | None]


def _show(value: Any) -> str:
    """A value as one safe line: JSON, with anything unprintable (bidi overrides, U+2028, ...)
    escaped as \\uXXXX."""
    text = json.dumps(value, ensure_ascii=False)
    text = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
    return text if len(text) <= 60 else text[:57] + "..."


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
    checker = _checker(schema, formats or {})
    errors = list(checker.iter_errors(value))
    if errors:
        first = min(errors, key=lambda error: _position(error, value))
        raise _refusal(first, value, where, words or {})


def _checker(schema: dict[str, Any], formats: Mapping[str, Format]) -> Any:
    """A jsonschema validator for ``schema`` with the keywords read as this module says."""
    try:
        from jsonschema import validators
    except ImportError as exc:
        raise MissingExtra("jsonschema", "render") from exc
    base = validators.validator_for(schema, default=validators.Draft202012Validator)
    return _checker_class(base, tuple(formats.items()))(schema)


@functools.lru_cache(maxsize=16)
def _checker_class(base: Any, formats: tuple[tuple[str, Format], ...]) -> Any:
    """``base`` (a jsonschema validator class) with the keywords read as this module says."""
    from jsonschema import ValidationError, validators

    plain_type = base.VALIDATORS["type"]
    checks = dict(formats)

    def typed(checker: Any, types: Any, instance: Any, sub: dict[str, Any]) -> Iterator[Any]:
        errors = list(plain_type(checker, types, instance, sub))
        yield from errors
        if not errors and isinstance(instance, str) and _UNSAFE_CHAR.search(instance):
            yield ValidationError("unsafe character", validator=SAFE_TEXT)

    def pattern(checker: Any, patrn: str, instance: Any, sub: dict[str, Any]) -> Iterator[Any]:
        if isinstance(instance, str) and not re.fullmatch(patrn, instance):
            yield ValidationError(f"does not match {patrn}")

    def format_(checker: Any, name: str, instance: Any, sub: dict[str, Any]) -> Iterator[Any]:
        check = checks.get(name)
        problem = check(instance, sub) if check is not None and isinstance(instance, str) else None
        if problem is not None:
            yield ValidationError(problem)

    def property_names(checker: Any, names: Any, instance: Any, sub: Any) -> Iterator[Any]:
        if isinstance(instance, dict):
            for key in instance:
                yield from checker.descend(instance=key, schema={"type": "string", **names})

    types = base.TYPE_CHECKER.redefine_many(
        {
            "integer": lambda _, v: isinstance(v, int) and not isinstance(v, bool),
            "number": lambda _, v: isinstance(v, (int, float)) and not isinstance(v, bool),
        }
    )
    keywords = {"type": typed, "pattern": pattern, "format": format_}
    keywords["propertyNames"] = property_names
    return validators.extend(base, keywords, type_checker=types)


def _index(node: Any, step: Any) -> int:
    """Where ``step`` (a list index or an object key) stands in ``node``."""
    return step if isinstance(node, list) else list(node).index(step)


def _is_name_error(error: Any) -> bool:
    """Whether ``error`` is about a property's name (``propertyNames``), not a value."""
    return len(error.schema_path) >= 2 and error.schema_path[-2] == "propertyNames"


def _unknown_keys(error: Any) -> list[str]:
    """The keys of ``error``'s object that its schema does not name, in document order."""
    props = error.schema.get("properties", {})
    return [key for key in error.instance if key not in props]


def _position(error: Any, root: Any) -> list[tuple[int, ...]]:
    """Where ``error`` stands in the order the refusals are judged in (the lowest wins)."""
    levels: list[tuple[int, ...]] = []
    node = root
    for step in error.absolute_path:
        levels.append((1, _index(node, step), 1))
        node = node[step]
    keyword = error.validator
    rank = _OWN_KEYWORDS.index(keyword) if keyword in _OWN_KEYWORDS else len(_OWN_KEYWORDS)
    if _is_name_error(error):
        levels.append((1, _index(node, error.instance), 0, rank))
    elif keyword == "additionalProperties" and error.validator_value is False:
        levels.append((1, _index(node, _unknown_keys(error)[0]), 1))
    elif keyword in _KEYS_KEYWORDS:
        levels.append((2, _KEYS_KEYWORDS.index(keyword)))
    else:
        levels.append((0, rank))
    return levels


def _key_path(steps: Any, where: str) -> str:
    """The key path of ``steps`` below ``where``: ``volumes[0].host``."""
    path = where
    for step in steps:
        if isinstance(step, int):
            path = f"{path}[{step}]"
        else:
            path = f"{path}.{shown_key(step)}" if path else shown_key(step)
    return path


def _refusal(error: Any, root: Any, where: str, words: Mapping[str, str]) -> ConfigError:
    """The one line ``error`` (a jsonschema ValidationError) reads as, naming its key path."""
    path = _key_path(error.absolute_path, where)
    keyword, expected, value = error.validator, error.validator_value, error.instance
    if _is_name_error(error):
        path = _key_path([value], path)
    elif keyword == "additionalProperties" and expected is False:
        key = _unknown_keys(error)[0]
        return _unknown_key(error.schema, key, _key_path([key], path))
    elif keyword == "required":
        missing = next(key for key in expected if key not in value)
        prefix = f"{path}." if path else ""
        return ConfigError(f"{prefix}{missing}: required", key=f"{prefix}{missing}")
    return ConfigError(f"{path or 'host file'}: {_wording(error, words)}", key=path)


def _unknown_key(schema: dict[str, Any], key: str, path: str) -> ConfigError:
    """An object's key its schema does not allow, with the nearest allowed key as the hint."""
    allowed = sorted(k for k in schema.get("properties", {}) if not k.startswith("$"))
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f"did you mean {close[0]}?" if close else f"allowed: {', '.join(allowed)}"
    if "x-unknown-key-note" in schema:
        hint += f"; {schema['x-unknown-key-note']}"
    return ConfigError(f"{path}: unknown key ({hint})", key=path)


def _wording(error: Any, words: Mapping[str, str]) -> str:
    """What is wrong with ``error``'s value, worded to follow its key path."""
    keyword, expected, value = error.validator, error.validator_value, error.instance
    shown = _show(value)
    props = ", ".join(error.schema.get("properties", {}))
    described = f"{shown} is not valid: {error.schema.get('description', '')}".rstrip(": ")
    wordings: dict[str, Callable[[], str]] = {
        "oneOf": lambda: described,
        "const": lambda: f"must be {_show(expected)}",
        "enum": lambda: f"{shown} is not one of {', '.join(map(str, expected))}",
        "type": lambda: f"must be {_TYPE_WORDS[expected]}, not {shown}",
        SAFE_TEXT: lambda: _unsafe_wording(value),
        "minLength": lambda: "must not be empty",
        "format": lambda: f"{shown} {error.message}",
        "maxLength": lambda: f"{shown} is {len(value)} characters; at most {expected}",
        "pattern": lambda: f"{shown} {words.get(expected, f'does not match {expected}')}",
        "minimum": lambda: f"{shown} is below the minimum {expected}",
        "exclusiveMinimum": lambda: f"{shown} must be above {expected}",
        "maximum": lambda: f"{shown} is above the maximum {expected}",
        "minProperties": lambda: f"needs one of {props}",
        "maxProperties": lambda: f"give only one of {props}",
    }
    wording = wordings.get(keyword)
    return wording() if wording is not None else f"{shown} {error.message}"


def _unsafe_wording(value: str) -> str:
    bad = _UNSAFE_CHAR.search(value)
    c = bad.group() if bad is not None else ""
    return "contains a NUL character" if c == "\x00" else f"contains the character U+{ord(c):04X}"


__all__ = ["validate"]
