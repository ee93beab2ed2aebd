"""deploy/schemacheck.py: the keywords it reads, its pattern wording, its format checks and which
refusal it gives where a value breaks several keywords.
(The host file's own refusals are in tests/unit/deploy/test_launch.py.)"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from vllm_ledger.deploy.schemacheck import validate
from vllm_ledger.errors import ConfigError, MissingExtra

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "word": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 4},
        "even": {"type": "string", "format": "even-length"},
        "other": {"type": "string", "format": "not-checked"},
    },
}
WORDS = {"^[a-z]+$": "is not a lowercase word"}


def even(value: str, schema: dict[str, Any]) -> str | None:
    return None if len(value) % 2 == 0 else f"has {len(value)} characters, an odd number"


def refusal(value: Any) -> str:
    with pytest.raises(ConfigError) as exc:
        validate(value, SCHEMA, "", words=WORDS, formats={"even-length": even})
    return str(exc.value)


def test_a_pattern_refusal_reads_as_the_caller_words_it() -> None:
    assert refusal({"word": "Ab"}) == 'word: "Ab" is not a lowercase word'
    with pytest.raises(ConfigError) as exc:
        validate({"word": "Ab"}, SCHEMA, "")
    assert str(exc.value) == 'word: "Ab" does not match ^[a-z]+$'


def test_max_length_counts_characters() -> None:
    validate({"word": "abcd"}, SCHEMA, "")
    assert refusal({"word": "abcde"}) == 'word: "abcde" is 5 characters; at most 4'


def test_a_format_is_checked_by_the_callers_check_and_only_then() -> None:
    validate({"even": "ab", "other": "x"}, SCHEMA, "", formats={"even-length": even})
    assert refusal({"even": "abc"}) == 'even: "abc" has 3 characters, an odd number'
    validate({"even": "abc"}, SCHEMA, "")  # no check given: an annotation, as JSON Schema has it


def test_control_characters_are_refused_before_anything_else() -> None:
    assert refusal({"word": "a\x1bb"}) == "word: contains the character U+001B"
    assert refusal({"even": "\u2028"}) == "even: contains the character U+2028"
    assert refusal({"word": "a\x00"}) == "word: contains a NUL character"


def test_a_pattern_describes_the_whole_value() -> None:
    """Applied with re.fullmatch, as ECMA-262 reads ^...$: no trailing newline slips past $."""
    assert refusal({"word": "ab\n"}) == 'word: "ab\\n" is not a lowercase word'


def test_a_whole_float_is_not_an_integer() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"}}}
    validate({"n": 8, "x": 0.5}, schema, "")
    assert _first({"n": 8.0}, schema) == "n: must be an integer, not 8.0"
    assert _first({"n": True}, schema) == "n: must be an integer, not true"
    assert _first({"x": False}, schema) == "x: must be a number, not false"


def test_the_first_refusal_in_document_order_wins() -> None:
    """A value's own keywords before the values it holds, keys in the order given, a missing
    required key after every key present."""
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["a", "b"],
        "properties": {"a": {"type": "integer"}, "b": {"type": "string", "minLength": 1}},
    }
    assert _first({"b": "", "a": "x"}, schema) == "b: must not be empty"
    assert _first({"a": "x", "b": ""}, schema) == 'a: must be an integer, not "x"'
    assert _first({"zz": 1, "b": ""}, schema) == "zz: unknown key (allowed: a, b)"
    assert _first({"b": "", "zz": 1}, schema) == "b: must not be empty"
    assert _first({"b": "x"}, schema) == "a: required"
    assert _first([1], schema) == "host file: must be an object, not [1]"


def test_a_property_name_is_checked_as_a_string_first() -> None:
    schema = {"type": "object", "propertyNames": {"pattern": "^[A-Z]+$"}}
    assert _first({"a": 1}, schema) == 'a: "a" does not match ^[A-Z]+$'
    assert _first({"\x1b": 1}, schema) == "'\\x1b': contains the character U+001B"


def test_without_jsonschema_the_refusal_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    with pytest.raises(MissingExtra) as exc:
        validate({"word": "ab"}, SCHEMA, "")
    assert str(exc.value) == "this command needs jsonschema: pip install 'vllm-ledger[render]'"


def _first(value: Any, schema: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as exc:
        validate(value, schema, "")
    return str(exc.value)
