"""deploy/schemacheck.py: the keywords it reads, its pattern wording and its format checks.
(The host file's own refusals are in tests/unit/deploy/test_launch.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from vllm_ledger.deploy.schemacheck import validate
from vllm_ledger.errors import ConfigError

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
