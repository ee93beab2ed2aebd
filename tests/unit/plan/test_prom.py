"""A Prometheus query (plan/prom.py's ``http_get``) is bounded: a server that drips its headers
or its body a byte at a time is cut at the total deadline, in one line naming the address (a
real socket on 127.0.0.1)."""

from __future__ import annotations

import time

import pytest

from tests.rawhttp import BODY_DRIP, HEADERS_DRIP, DripServer
from vllm_ledger.errors import RemoteError
from vllm_ledger.plan.prom import http_get


@pytest.mark.parametrize("drip_server", [HEADERS_DRIP, BODY_DRIP], indirect=True)
def test_prometheus_answer_is_cut_at_its_deadline(drip_server: DripServer) -> None:
    url = f"http://127.0.0.1:{drip_server.port}/api/v1/query?query=up"
    began = time.monotonic()
    with pytest.raises(RemoteError) as exc:
        http_get(url, deadline_s=1.0)
    took = time.monotonic() - began
    assert str(exc.value) == (
        f"{url} did not answer within 1 s: check that Prometheus is up and not overloaded"
    )
    assert took < 1.0 + 2.0, took
