"""Strict JSON (``vllm_ledger.strictjson``): what a lenient parser would guess at is refused
with one line, at every place a user or a remote hands us JSON."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.inproc import run_cli
from vllm_ledger.bot.validate import load_usage
from vllm_ledger.deploy.host import load_host
from vllm_ledger.errors import ConfigError, RemoteError, StatusParseError
from vllm_ledger.formats.status import parse as parse_status
from vllm_ledger.plan.prom import vector_answer
from vllm_ledger.strictjson import (
    MAX_DEPTH,
    depth,
    is_number,
    load_file,
    loads,
    number_in,
    whole_in,
    within_depth,
)

DEEP = "[" * 100_000 + "]" * 100_000


def refusal(data: str | bytes, max_bytes: int = 1 << 24, max_depth: int = MAX_DEPTH) -> ConfigError:
    with pytest.raises(ConfigError) as exc:
        loads(data, max_bytes=max_bytes, what="x.json", max_depth=max_depth)
    assert "\n" not in str(exc.value)
    return exc.value


def test_good_documents_load() -> None:
    doc = '{"a": [1, 2.5, "s", true, null, {"b": {}}], "c": "[[[ not nesting {{"}'
    assert loads(doc, max_bytes=1024) == json.loads(doc)
    assert loads(doc.encode(), max_bytes=1024) == json.loads(doc)
    nested = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert loads(nested, max_bytes=1024) == json.loads(nested)


@pytest.mark.parametrize(
    ("text", "message", "key"),
    [
        ('{"model": "m", "model": "n"}', "x.json: model: key given twice", "model"),
        ('{"a": {"b": 1, "b": 2}}', "x.json: b: key given twice", "b"),
        ('{"k\\n": 1, "k\\n": 2}', "x.json: 'k\\n': key given twice", "k\n"),
        ('{"\\u202e": 1, "\\u202e": 2}', "x.json: '\\u202e': key given twice", "\u202e"),
    ],
)
def test_a_key_given_twice_is_named(text: str, message: str, key: str) -> None:
    exc = refusal(text)
    assert (str(exc), exc.key) == (message, key)


def test_deep_nesting_is_one_line_not_a_recursion_error() -> None:
    assert depth(DEEP) == 100_000
    exc = refusal(DEEP)
    assert str(exc) == f"x.json is nested 100000 levels deep; the limit is {MAX_DEPTH}"
    assert str(refusal('{"a":' * 5000 + "1" + "}" * 5000)).startswith("x.json is nested 5000")
    assert str(refusal("[" * 100_000)).startswith("x.json is nested 100000 levels deep")
    too_deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    assert "nested 33 levels deep" in str(refusal(too_deep))
    assert str(refusal("[[[]]]", max_depth=2)) == "x.json is nested 3 levels deep; the limit is 2"


def test_brackets_inside_strings_are_not_nesting() -> None:
    text = json.dumps({"a": "[" * 1000 + '\\"{' * 1000})
    assert depth(text) == 1
    assert loads(text, max_bytes=1 << 16) == json.loads(text)


def _depth_by_hand(text: str) -> int:
    """The reference: one character at a time, strings and escapes followed as JSON does."""
    deepest = level = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            in_string, escaped = (ch != '"' or escaped), (ch == "\\" and not escaped)
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            level += 1
            deepest = max(deepest, level)
        elif ch in "]}":
            level -= 1
    return deepest


_TEXTS = st.text(alphabet=st.sampled_from('[]{}"\\ax\u00e9\U0001f600 ,:'), max_size=12)
_DOCS = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXTS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXTS, inner, max_size=4),
    max_leaves=40,
)


@given(doc=_DOCS, limit=st.integers(min_value=0, max_value=12))
def test_depth_and_its_bound_follow_strings_and_escapes(doc: object, limit: int) -> None:
    """Any JSON document, with brackets, quotes and backslashes inside its strings: ``depth``
    is the reference's figure and ``within_depth`` says whether it is within ``limit``."""
    for text in (json.dumps(doc), json.dumps(doc, ensure_ascii=False, separators=(",", ":"))):
        want = _depth_by_hand(text)
        assert depth(text) == depth(text.encode()) == want
        assert within_depth(text, limit) is within_depth(text.encode(), limit) is (want <= limit)


def test_an_unclosed_bracket_is_never_within_the_bound() -> None:
    """A parser recurses as deep as the open brackets go before it fails."""
    assert not within_depth("[" * 100_000, MAX_DEPTH)
    assert not within_depth('[1, "]"', MAX_DEPTH)
    assert within_depth('["[", "\\\\", {"a": "}\\""}]', 2)
    assert not within_depth('["[", "\\\\", {"a": "}\\""}]', 1)
    assert within_depth("", 0) and within_depth("1", 0) and not within_depth("[]", 0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": NaN}', "x.json holds NaN, which JSON does not allow"),
        ("[Infinity]", "x.json holds Infinity, which JSON does not allow"),
        ("[-Infinity]", "x.json holds -Infinity, which JSON does not allow"),
        ("[1e400]", "x.json holds 1e400, a number too large for a float"),
        ("[" + "9" * 101 + "]", "x.json holds a number longer than 100 characters"),
    ],
)
def test_non_finite_numbers_are_refused(text: str, message: str) -> None:
    assert str(refusal(text)) == message


def test_size_is_checked_before_anything_is_parsed() -> None:
    assert str(refusal("[1]" + " " * 1021, max_bytes=1023)) == "x.json is larger than 1023 bytes"
    assert str(refusal(b" " * (1 << 20 | 1), max_bytes=1 << 20)) == "x.json is larger than 1 MiB"
    assert (
        str(refusal("é" * 600, max_bytes=1024)) == "x.json is larger than 1 KiB"
    )  # bytes, not chars


def test_syntax_and_encoding_errors_are_one_line() -> None:
    assert str(refusal('{"a": 1,}')).startswith("x.json is not JSON: line 1 column 9: ")
    assert str(refusal(b'{"a": "\xff"}')) == "x.json is not UTF-8 text (byte 7)"
    assert str(refusal("")).startswith("x.json is not JSON: line 1 column 1")


def test_hint_goes_with_every_refusal() -> None:
    with pytest.raises(ConfigError) as exc:
        loads("[NaN]", max_bytes=64, what="c.json", hint="is it the config?")
    assert str(exc.value) == "c.json holds NaN, which JSON does not allow: is it the config?"


def test_load_file_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "host.json"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match=r"^.*host\.json is not a regular file$"):
        load_file(fifo, max_bytes=1024)
    with pytest.raises(ConfigError, match="is not a regular file"):
        load_file(tmp_path, max_bytes=1024)
    big = tmp_path / "big.json"
    big.write_bytes(b"[" + b"0," * (1 << 20) + b"0]")
    with pytest.raises(ConfigError, match=r"big\.json is larger than 1 KiB$"):
        load_file(big, max_bytes=1024)


# ---- every place that parses JSON a user or a remote supplies ---------------------------


def test_host_file_is_strict(tmp_path: Path) -> None:
    hf = tmp_path / "host.json"
    for text, message in [
        (DEEP, f"host file {hf} is nested 100000 levels deep; the limit is {MAX_DEPTH}"),
        ('{"model": "m", "port": NaN}', f"host file {hf} holds NaN, which JSON does not allow"),
        ('{"model": "m", "image": "i", "image": "-x"}', f"host file {hf}: image: key given twice"),
    ]:
        hf.write_text(text)
        with pytest.raises(ConfigError) as exc:
            load_host(hf)
        assert str(exc.value) == message
        rc, out, err = run_cli("render", "--host", str(hf), "--output", str(tmp_path / "r.sh"))
        assert (rc, out, err) == (2, "", f"vllm-ledger: error: {exc.value}\n")
        assert not (tmp_path / "r.sh").exists()


def test_notification_config_is_strict(tmp_path: Path) -> None:
    cfg = tmp_path / "notify.json"
    entry = '{"target": "h", "code_dir": "/c", "data_dir": "/d"}'
    cfg.write_text('{"usage": {"19001": ' + entry + ', "19001": ' + entry + "}}")
    with pytest.raises(ConfigError) as exc:
        load_usage(cfg)
    assert str(exc.value) == f"{cfg}: 19001: key given twice: is it the notification config?"
    cfg.write_text('{"usage": ' + "[" * 50_000 + "]" * 50_000 + "}")
    with pytest.raises(ConfigError, match="is nested 50001 levels deep; the limit is 32"):
        load_usage(cfg)


def test_status_from_a_remote_is_strict() -> None:
    with pytest.raises(StatusParseError, match=r"^status is nested 100000 levels deep"):
        parse_status(DEEP.encode(), max_bytes=1 << 20)
    with pytest.raises(StatusParseError, match=r"^status: schema: key given twice$"):
        parse_status(b'{"schema": 1, "schema": 1}')
    with pytest.raises(StatusParseError, match=r"^status holds NaN"):
        parse_status(b'{"schema": NaN}')


def test_prometheus_answer_is_strict() -> None:
    def answer(body: bytes) -> RemoteError:
        with pytest.raises(RemoteError) as exc:
            vector_answer("http://prom:9090", "up", fetch=lambda _url: body)
        assert "\n" not in str(exc.value)
        return exc.value

    assert "is nested 100000 levels deep" in str(answer(DEEP.encode()))
    dup = b'{"status": "success", "status": "error"}'
    assert str(answer(dup)).endswith("http://prom:9090's answer: status: key given twice")
    assert "holds NaN" in str(answer(b'{"status": "success", "data": NaN}'))
    assert "is larger than 16 MiB" in str(answer(b" " * (16 * 1024 * 1024 + 1)))
    assert "with an object" in str(answer(b"[]"))
    no_list = b'{"status": "success", "data": {"resultType": "vector", "result": 7}}'
    assert str(answer(no_list)) == "http://prom:9090 answered 'up' without a result list"
    ok = b'{"status": "success", "data": {"resultType": "vector", "result": []}}'
    assert vector_answer("http://prom:9090", "up", fetch=lambda _url: ok)[0] == []


def test_a_number_is_an_int_or_a_float_finite_never_a_bool() -> None:
    values = (0, 1.5, -2, True, "1", None, math.inf, math.nan)
    assert [v for v in values if is_number(v)] == [0, 1.5, -2]
    assert [v for v in (0, 10, 10.5, -1, False, math.inf) if number_in(v, 0, 10)] == [0, 10]


def test_a_whole_number_is_an_int_in_range_never_a_bool() -> None:
    assert [v for v in (0, 10, 11, 5.0, True, "5") if whole_in(v, 0, 10)] == [0, 10]
