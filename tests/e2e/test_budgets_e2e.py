"""Hard budgets against a real vLLM 0.32 on CPU (DP 2 x API 2, three keys): a key pushed past
its daily budget is answered 429 within the stated lag by both API processes while the others
are served; at the next period it is served again (the enforcer's clock passed in); with the
enforcer stopped, enforcement fails open."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from tests.usage_hosts import midday_zone
from vllm_ledger import enforcer
from vllm_ledger.format import overbudget
from vllm_ledger.write import keys

pytestmark = pytest.mark.e2e

KEYS = {"k1": "sk-budget-ONE-4d2c", "k2": "sk-budget-TWO-8e1a", "k3": "sk-budget-THREE-0b7f"}
LAG_S = 10.0  # the stated bound (docs/budgets.md)
INTERVAL_S = 0.5  # the enforcer's cadence here (5 s by default): stale after 3 s
ZONE = midday_zone()  # the budgets' day: about noon there, so no midnight falls in the test


class Clock:
    """The enforcer's clock: the wall clock, or a fixed instant when the test says so."""

    def __init__(self) -> None:
        self.fixed: float | None = None

    def __call__(self) -> float:
        return time.time() if self.fixed is None else self.fixed


def _ask(url: str, key: str, usage: list[int] | None = None) -> int:
    """One request on a new connection (so both API processes get some); its tokens are added
    to ``usage``."""
    body = {
        "model": "tiny",
        "messages": [{"role": "user", "content": "tell me about budgets " * 20}],
        "max_tokens": 8,
        "ignore_eos": True,
    }
    with httpx.Client(base_url=url, timeout=120.0) as c:
        r = c.post(
            "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {KEYS[key]}"}
        )
    if r.status_code == 200 and usage is not None:
        usage.append(r.json()["usage"]["total_tokens"])
    if r.status_code == 429:
        err = r.json()["error"]
        assert (err["type"], err["code"]) == ("insufficient_quota", "budget_exceeded")
        assert 1 <= int(r.headers["retry-after"]) <= 86400
    return r.status_code


def _all(url: str, status: int) -> bool:
    """Whether six new connections in a row get ``status`` for k1: both API processes answer
    so (each looks at the enforcer's file once a second, CHECK_EVERY_S, so one may see a change
    that much after the other)."""
    return [_ask(url, "k1") for _ in range(6)] == [status] * 6


def _until(what: str, check: Any, timeout_s: float) -> float:
    """Seconds from now to the sending of the ``check()`` that held (asking again at once, as
    a client would): the time its own requests took to answer is not counted."""
    start = time.monotonic()
    while True:
        asked = time.monotonic()
        if check():
            return asked - start
        if time.monotonic() - start > timeout_s:
            raise AssertionError(f"{what}: not within {timeout_s} s")


def test_a_key_past_its_hard_budget_is_refused_on_both_api_processes(
    vllm_server: Any, tmp_path: Path
) -> None:
    root = tmp_path / "ledger"
    s = vllm_server(
        root,
        extra_args=(
            "--data-parallel-size",
            "2",
            "--api-server-count",
            "2",
            "--api-key",
            *KEYS.values(),
            "--middleware",
            "vllm_ledger.middleware.LedgerMiddleware",
        ),
    )
    spent: list[int] = []
    assert _ask(s.url, "k1", spent) == 200  # what one request costs, to the token
    labels = keys.KeyLabels(keys.root_secret(root))  # made by the middleware at its start
    label_of = {k: labels.label(raw.encode()) for k, raw in KEYS.items()}
    budgets = tmp_path / "budgets.toml"
    budgets.write_text(  # crossed by the tenth request of k1 exactly
        f'zone = "{ZONE}"\nenforce = true\n'
        f'[[budget]]\nkey = "{label_of["k1"]}"\ntokens = {int(spent[0] * 9.5)}\n'
        f'[[budget]]\nkey = "{label_of["k3"]}"\ntokens = 1000000\n'
    )
    clock = Clock()
    stop = threading.Event()
    runner = threading.Thread(
        target=enforcer.run,
        args=(root, budgets),
        kwargs={"interval_s": INTERVAL_S, "clock": clock, "stop": stop},
    )
    runner.start()
    try:
        # k1 spends: nine more requests, the last crossing its hard budget.
        for _ in range(9):
            assert _ask(s.url, "k1", spent) == 200
        assert spent == [spent[0]] * 10
        lag = _until("k1 refused", lambda: _ask(s.url, "k1") == 429, LAG_S + 5)
        print(f"\nk1 refused {lag:.1f} s after the request that crossed its budget")
        # Both API processes within the stated lag of the crossing.
        both = lag + _until("k1 refused by both API processes", lambda: _all(s.url, 429), LAG_S)
        print(f"k1 refused by both {both:.1f} s after it")
        assert both <= LAG_S
        # Both API processes refuse it (20 new connections, all refused); the others are served.
        # Six refusals in a row may all have come from one process: the other reads the file
        # again within CHECK_EVERY_S.
        time.sleep(overbudget.CHECK_EVERY_S + 0.5)
        assert [_ask(s.url, "k1") for _ in range(20)] == [429] * 20
        assert _ask(s.url, "k2") == 200 and _ask(s.url, "k3") == 200

        # The next day (the enforcer's clock passed in): served again.
        tomorrow = datetime.now(ZoneInfo(ZONE)).date() + timedelta(days=1)
        clock.fixed = datetime(
            tomorrow.year, tomorrow.month, tomorrow.day, 0, 0, 5, tzinfo=ZoneInfo(ZONE)
        ).timestamp()
        _until("k1 served the next day", lambda: _all(s.url, 200), LAG_S)
        clock.fixed = None  # today again: over again
        _until("k1 refused again", lambda: _all(s.url, 429), LAG_S)

        # The enforcer stops: once its file is stale, nothing is refused (fails open).
        stop.set()
        runner.join(30)
        waited = _until("k1 served, unenforced", lambda: _ask(s.url, "k1") == 200, 30)
        written, fresh, over = overbudget.parse(overbudget.path_in(root).read_bytes())
        assert ("key", label_of["k1"]) in over and time.time() - written > fresh
        assert waited <= 6 * INTERVAL_S + LAG_S
    finally:
        stop.set()
        runner.join(30)
        s.stop()
