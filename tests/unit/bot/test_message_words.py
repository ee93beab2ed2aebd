"""The status reply's words: one table per language, each with the same labels, and no
control character that the reply's final filter would have to drop."""

from __future__ import annotations

import unicodedata
from typing import Any

from vllm_ledger.bot.message_words import EN, LANGS, WORDS, ZH


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    return [t for v in value for t in _texts(v)]


def test_every_language_has_the_same_labels() -> None:
    assert tuple(WORDS) == LANGS and WORDS["zh"] is ZH and WORDS["en"] is EN
    assert set(ZH) == set(EN)
    for key in ("p", "windows"):
        assert set(ZH[key]) == set(EN[key])
    assert len(ZH["cols"]) == len(EN["cols"]) and len(ZH["units"]) == len(EN["units"]) == 4


def test_no_word_holds_a_control_character() -> None:
    for words in WORDS.values():
        for text in _texts(words):
            assert all(unicodedata.category(c)[0] != "C" for c in text), text
