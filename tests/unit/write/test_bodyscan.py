"""The body scan against json itself: for any JSON object split into chunks anywhere, the
wanted top-level string fields are what ``json.dumps`` wrote for them, and nothing nested or
unwanted is taken."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from vllm_ledger.write.bodyscan import MAX_VALUE_BYTES, BodyScan, parse_whole

WANTED = (b"model", b"user", b"request_id")

text = st.text(alphabet=st.characters(codec="utf-8"), max_size=40) | st.sampled_from(
    ['a"b', "back\\slash\\", '\\"', "\\\\", "", "{[,:]}", "model", '"user"']
)
leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text
values = st.recursive(
    leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=12,
)
keys = st.sampled_from(["model", "user", "request_id", "messages", "n", "x"]) | text


def _scan(body: bytes, cuts: list[int]) -> BodyScan:
    scan = BodyScan(WANTED)
    at = 0
    for cut in sorted({c % (len(body) + 1) for c in cuts}):
        scan.feed(body[at:cut])
        at = cut
    scan.feed(body[at:])
    return scan


def _expected(obj: dict[str, Any], ensure_ascii: bool) -> dict[bytes, bytes]:
    out = {}
    for k in WANTED:
        v = obj.get(k.decode())
        if isinstance(v, str):
            raw = json.dumps(v, ensure_ascii=ensure_ascii)[1:-1].encode()
            if len(raw) <= MAX_VALUE_BYTES:
                out[k] = raw
    return out


@given(
    obj=st.dictionaries(keys, values, max_size=8),
    cuts=st.lists(st.integers(min_value=0), max_size=6),
    ensure_ascii=st.booleans(),
    indent=st.sampled_from([None, 1]),
)
def test_the_wanted_fields_are_found_wherever_the_chunks_are_cut(
    obj: dict[str, Any], cuts: list[int], ensure_ascii: bool, indent: int | None
) -> None:
    body = json.dumps(obj, ensure_ascii=ensure_ascii, indent=indent).encode()
    scan = _scan(body, cuts)
    assert scan.found == _expected(obj, ensure_ascii)


def test_nested_and_unwanted_fields_are_not_taken() -> None:
    body = json.dumps(
        {"messages": [{"model": "inner", "user": "u0"}], "x": {"user": "nested"}, "model": "m"}
    ).encode()
    scan = _scan(body, [])
    assert scan.found == {b"model": b"m"}
    assert not scan.done or scan.found  # the object closed without user or request_id


def test_the_scan_stops_once_every_field_is_found() -> None:
    body = b'{"model":"a","user":"b","request_id":"c","messages":[' + b'"x",' * 1000 + b'"y"]}'
    scan = BodyScan(WANTED)
    scan.feed(body[:45])
    assert scan.done and scan.found == {b"model": b"a", b"user": b"b", b"request_id": b"c"}


def test_a_long_value_is_too_long_never_cut() -> None:
    body = json.dumps({"user": "u" * (MAX_VALUE_BYTES + 1), "model": "m"}).encode()
    scan = _scan(body, [7, 100])
    assert scan.found == {b"model": b"m"} and scan.too_long == {b"user"}


def test_not_an_object_and_a_hostile_body_end_the_scan() -> None:
    for body in (b"[1,2]", b'"model"', b"  \n 42"):
        scan = _scan(body, [1])
        assert scan.done and scan.found == {}
    many = b'{"messages":[' + b'"a",' * 50_000 + b'"b"],"model":"m"}'
    scan = BodyScan(WANTED, max_steps=1000)
    scan.feed(many)
    assert scan.done and scan.found == {}
    scan = BodyScan(WANTED)
    for byte in (b"\xff\xfe{", b'"\\', b'"', b'model":"\x00\x01"}'):
        scan.feed(byte)  # never raises, whatever the bytes


def test_a_string_of_many_escaped_quotes_and_backslashes_split_anywhere() -> None:
    code = 'x = d["k"] + f(\'a\', "b")  # "q" \\\\ \\"\n' * 40  # past the find loop's few
    obj = {"messages": [{"role": "user", "content": code}], "model": "m", "user": 'a"b\\'}
    body = json.dumps(obj).encode()
    want = {b"model": b"m", b"user": json.dumps('a"b\\')[1:-1].encode()}
    for cut in range(0, len(body), 7):
        assert _scan(body, [cut, cut + 3]).found == want, cut


def _loads_or_error(body: bytes) -> tuple[str, Any]:
    try:
        return "value", repr(json.loads(body))  # repr: a NaN equals itself
    except (ValueError, RecursionError) as exc:
        return "error", type(exc).__name__


def _parse_or_error(body: bytes) -> tuple[str, Any]:
    try:
        return "value", repr(parse_whole(body))
    except (ValueError, RecursionError) as exc:
        return "error", type(exc).__name__


_odd_bodies = st.sampled_from(
    [
        b"{",
        b"{}",
        b"{} ",
        b"{}\n\t\r ",
        b"{} x",
        "{}\u00a0".encode(),  # a space json does not take
        b"{}{}",
        b'{"a":1}\x00',
        b"{\x00",
        b"{\x00\x00\x00",
        b"{\x00a\x00",
        b"{\xff}",
        b'{"a":"\xed\xa0\x80"}',  # a lone surrogate, as surrogatepass takes it
        b"\xef\xbb\xbf{}",
        b" {}",
        b"[1]",
        b"{" * 100_000,
    ]
)


@given(
    body=_odd_bodies
    | st.binary(max_size=12).map(lambda b: b"{" + b)
    | st.dictionaries(keys, values, max_size=6).flatmap(
        lambda obj: st.sampled_from(["utf-8", "utf-16-le", "utf-16", "utf-32"]).map(
            lambda enc: json.dumps(obj, ensure_ascii=False).encode(enc, "surrogatepass")
        )
    )
)
def test_a_whole_body_parses_as_json_loads_would(body: bytes) -> None:
    assert _parse_or_error(body) == _loads_or_error(body)
