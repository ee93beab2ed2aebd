"""Scrape targets as ``observability`` takes them (observe/targets.py): HOST:PORT, optionally
ADDRESS=NAME, and whether one is loopback."""

from __future__ import annotations

import pytest

from vllm_ledger.errors import BadArgument
from vllm_ledger.observe.targets import check_named_target, check_target, is_loopback


def test_a_target_is_host_port_returned_as_given() -> None:
    for good in ("192.168.1.10:8000", "gpu1:8000", "[::1]:9090", "localhost:1"):
        assert check_target(good) == good
    for bad in ("gpu1", "gpu1:0", "gpu1:65536", "gpu1:+80", "[fe80::1%eth0]:80", ":80"):
        with pytest.raises(BadArgument, match="is not HOST:PORT"):
            check_target(bad)


def test_a_named_target_names_its_instance() -> None:
    assert check_named_target("10.0.0.5:8000") == ("10.0.0.5:8000", None)
    assert check_named_target("10.0.0.5:8000=gpu1:8000") == ("10.0.0.5:8000", "gpu1:8000")
    with pytest.raises(BadArgument, match=r"^target 'gpu1' is not HOST:PORT"):
        check_named_target("10.0.0.5:8000=gpu1")


def test_loopback_targets() -> None:
    assert [is_loopback(t) for t in ("127.0.0.1:9", "127.1.2.3:9", "localhost:9", "[::1]:9")] == [
        True
    ] * 4
    assert not is_loopback("192.168.1.10:8000") and not is_loopback("gpu1:8000")
