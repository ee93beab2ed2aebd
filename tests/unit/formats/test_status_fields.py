"""Strict reading of a remote status document's bytes and fields (formats/status_fields.py)."""

from __future__ import annotations

import pytest

from vllm_ledger.errors import StatusParseError
from vllm_ledger.formats.status_fields import (
    MAX_NUMBER_CHARS,
    field_bool,
    field_codes,
    field_float,
    field_int,
    field_obj,
    loads,
)


def test_loads_takes_ascii_json_only() -> None:
    assert loads(b'{"a": [1, 2.5]}') == {"a": [1, 2.5]}
    for data, why in (
        ('{"a": "\u00e9"}'.encode(), "not ASCII"),
        (b'{"a": "\x01"}', "control character"),
        (b'{"a": NaN}', None),
        (b'{"a": ' + b"1" * (MAX_NUMBER_CHARS + 1) + b"}", "number too long"),
        (b"[" * 20 + b"]" * 20, None),
    ):
        with pytest.raises(StatusParseError) as got:
            loads(data)
        assert why is None or str(got.value) == why or why in str(got.value)


def test_each_field_is_type_and_range_checked() -> None:
    doc = {"n": 5, "x": 0.5, "t": True, "o": {"a": 1}, "b": True, "z": None}
    assert field_int(doc, "n", 0, 10) == 5
    assert field_float(doc, "x", 0.0, 1.0) == 0.5
    assert field_float(doc, "z", 0.0, 1.0, nullable=True) is None
    assert field_bool(doc, "t") is True
    assert field_obj(doc, "o") == {"a": 1}
    for call in (
        lambda: field_int(doc, "n", 6, 10),
        lambda: field_int(doc, "b", 0, 10),  # a bool is no integer here
        lambda: field_float(doc, "b", 0.0, 1.0),
        lambda: field_float(doc, "z", 0.0, 1.0),
        lambda: field_bool(doc, "n"),
        lambda: field_obj(doc, "n"),
    ):
        with pytest.raises(StatusParseError):
            call()


def test_codes_keep_the_callers_own_names() -> None:
    allowed = ("alive", "closed")
    assert field_codes({"w": {"alive": 2}}, "w", allowed, require_all=False) == (("alive", 2),)
    with pytest.raises(StatusParseError, match="closed: not an integer in range"):
        field_codes({"w": {"alive": 2}}, "w", allowed, require_all=True)
    with pytest.raises(StatusParseError, match="w: unknown code"):
        field_codes({"w": {"evil": 1}}, "w", allowed, require_all=False)
