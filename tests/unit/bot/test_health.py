"""The ``/health`` probe (bot/health.py) is bounded: a server that drips its headers or its body
a byte at a time cannot stretch a probe past its total deadline (a real socket on 127.0.0.1)."""

from __future__ import annotations

import time

import pytest

from tests.rawhttp import BODY_DRIP, HEADERS_DRIP, DripServer
from vllm_ledger.bot.health import Health, probe


@pytest.mark.parametrize("drip_server", [HEADERS_DRIP, BODY_DRIP], indirect=True)
def test_health_probe_is_cut_at_its_deadline(drip_server: DripServer) -> None:
    began = time.monotonic()
    assert probe("127.0.0.1", drip_server.port, timeout_s=0.6) == Health(drip_server.port, "down")
    took = time.monotonic() - began
    assert 0.5 <= took < 0.6 + 2.0, took
