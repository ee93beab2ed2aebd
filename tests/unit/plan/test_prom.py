"""A Prometheus query (plan/prom.py's ``http_get``) is bounded: a server that drips its headers
or its body a byte at a time is cut at the total deadline, in one line naming the address (a
real socket on 127.0.0.1). What a store says of its answer beside ``data`` (``isPartial``,
``warnings``, ``infos``) comes back with it, bounded and printable (``said_of``), and with each
answer of a query and its fallbacks (``first_answer``)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.rawhttp import BODY_DRIP, HEADERS_DRIP, DripServer
from vllm_ledger.errors import RemoteError
from vllm_ledger.plan.prom import (
    Said,
    first_answer,
    http_get,
    label_values_answer,
    said_of,
    targets_answer,
    vector_answer,
)


@pytest.mark.parametrize("drip_server", [HEADERS_DRIP, BODY_DRIP], indirect=True)
def test_prometheus_answer_is_cut_at_its_deadline(drip_server: DripServer) -> None:
    url = f"http://127.0.0.1:{drip_server.port}/api/v1/query?query=up"
    began = time.monotonic()
    with pytest.raises(RemoteError) as exc:
        http_get(url, deadline_s=0.6)
    took = time.monotonic() - began
    assert str(exc.value) == (
        f"{url} did not answer within 0.6 s: check that Prometheus is up and not overloaded"
    )
    assert took < 0.6 + 2.0, took


@pytest.mark.parametrize(
    ("beside", "said"),
    [
        ({}, Said()),
        ({"isPartial": False, "warnings": [], "infos": None}, Said()),
        ({"isPartial": True}, Said(partial=True)),
        ({"isPartial": "true"}, Said(partial=True)),  # not understood: not taken for whole
        ({"warnings": ["a store did not answer"]}, Said(warnings=("a store did not answer",))),
        ({"warnings": "one text"}, Said(warnings=("one text",))),
        ({"infos": ["PromQL info: x"]}, Said(infos=("PromQL info: x",))),
        ({"warnings": ["w"] * 8}, Said(warnings=("w",) * 5, warnings_left_out=3)),
        (
            {"warnings": ["\x1b[2J\u202e" + "y" * 300]},
            Said(warnings=("\\x1b[2J\\u202e" + "y" * 195 + "...",)),
        ),
    ],
)
def test_what_a_store_says_of_its_answer(beside: dict[str, Any], said: Said) -> None:
    assert said_of({"status": "success", "data": [], **beside}) == said
    assert said.incomplete == (said.partial or bool(said.warnings))


def test_each_answer_comes_with_what_the_store_said() -> None:
    def fetch(url: str) -> bytes:
        data: Any = {"resultType": "vector", "result": [{"metric": {}, "value": [1, "2"]}]}
        if "/targets" in url:
            data = {"activeTargets": []}
        elif "/label/" in url:
            data = ["vllm-ledger"]
        return json.dumps({"status": "success", "isPartial": True, "data": data}).encode()

    partial = Said(partial=True)
    assert vector_answer("http://v:8481", "up", 1.0, fetch) == ([({}, 2.0)], partial)
    assert targets_answer("http://v:8481", fetch) == ([], partial)
    assert label_values_answer("http://v:8481", "job", "up", 0, 1, fetch) == (
        ["vllm-ledger"],
        partial,
    )


def test_a_query_and_its_fallbacks_come_with_what_the_store_said_of_each() -> None:
    def fetch(url: str) -> bytes:
        empty = "query=a" in url  # the first came back empty, and partial
        result = [] if empty else [{"metric": {}, "value": [1, "NaN" if "query=b" in url else "3"]}]
        beside = {"isPartial": True} if empty else {}
        return json.dumps({"status": "success", "data": {"result": result}, **beside}).encode()

    got, said = first_answer("http://v:8481", ["a", "b", "c", "d"], 1.0, fetch)
    assert got == (3.0, "c")  # b's NaN is no value
    assert said == {"a": Said(partial=True), "b": Said(), "c": Said()}  # d was not asked
    assert first_answer("http://v:8481", ["a"], None, fetch) == (None, {"a": Said(partial=True)})
