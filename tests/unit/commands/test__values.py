"""The argparse types of a flag's value (commands/_values.py)."""

from __future__ import annotations

import pytest

from vllm_ledger.commands._values import (
    duration,
    instance,
    listen,
    number,
    port,
    text,
    tz_name,
    url,
)
from vllm_ledger.errors import BadArgument


def test_a_duration_takes_every_spelling_and_refuses_milliseconds() -> None:
    d = duration("--deadline", 0, 3600, "20s", lo_open=True)
    assert [d(v) for v in ("30s", "10m", "1h", "90")] == [30, 600, 3600, 90]
    with pytest.raises(BadArgument, match="--deadline '20000' looks like milliseconds"):
        d("20000")
    with pytest.raises(BadArgument, match="--deadline 'nan' is not finite"):
        d("nan")
    with pytest.raises(BadArgument, match="is out of range"):
        d("0")


def test_an_integer_duration_is_whole_seconds() -> None:
    d = duration("--every", 1, 60, "5s", integer=True)
    assert d("5") == 5 and isinstance(d("5"), int)
    with pytest.raises(BadArgument, match="is not a whole number of seconds"):
        d("1.5")


def test_numbers_ports_and_listen_addresses() -> None:
    assert number("--ratio", 0, 1, "0.5")("0.25") == 0.25
    with pytest.raises(BadArgument, match=r"^--ratio"):
        number("--ratio", 0, 1, "0.5")("2")
    assert port("--port")("8000") == 8000
    assert listen()("127.0.0.1:9464") == ("127.0.0.1", 9464)
    with pytest.raises(BadArgument, match=r"^--listen"):
        listen()(":9464")


def test_an_instance_is_host_port_or_a_bare_port() -> None:
    parse = instance()
    assert parse("gpu1:8000") == "gpu1:8000"
    assert parse("8000") == 8000
    with pytest.raises(BadArgument, match="is neither HOST:PORT nor a port"):
        parse("gpu1")


def test_text_urls_and_zones() -> None:
    assert text("--model", "qwen3-8b")("qwen3-8b") == "qwen3-8b"
    with pytest.raises(BadArgument, match=r"^--model"):
        text("--model", "qwen3-8b")("a\x1bb")
    assert url("--url", "http://h:9090")("http://h:9090") == "http://h:9090"
    with pytest.raises(BadArgument, match="is not an http:// or https:// URL"):
        url("--url", "http://h:9090")("ftp://h")
    with pytest.raises(BadArgument, match="names no host"):
        url("--url", "http://h:9090")("http://")
    assert tz_name()("UTC") == "UTC"
    with pytest.raises(BadArgument, match=r"^--tz 'Mars/Base'"):
        tz_name()("Mars/Base")
