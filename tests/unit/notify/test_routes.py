"""The endpoint's routes over a store on a fake clock, called as the endpoint calls them: the
command rate, a signed command stored once, a store fault answered 503, and each route's
wake-up."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ledgers import FakeClock
from vllm_ledger.notify.config import notifier_config
from vllm_ledger.notify.routes import RateLimit, Routes, guarded
from vllm_ledger.notify.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign
from vllm_ledger.notify.state_file import StoreUnavailable
from vllm_ledger.notify.store import Store

SECRET = b"unit-command-secret"
NOW = 1_764_400_000.0


class Woken:
    def __init__(self) -> None:
        self.sender = 0
        self.worker = 0


@pytest.fixture
def routes(tmp_path: Path) -> Iterator[tuple[Routes, Woken]]:
    cfg = notifier_config(
        {"notifier": {"lang": "en", "commands_per_minute": 2}},
        tmp_path / "private.json",
        {"VLLM_LEDGER_COMMAND_SECRET": SECRET.decode()},
    )
    store = Store(tmp_path / "state.sqlite", clock=FakeClock(NOW))
    woken = Woken()

    def sender() -> None:
        woken.sender += 1

    def worker() -> None:
        woken.worker += 1

    r = Routes(
        cfg,
        store,
        clock=FakeClock(NOW),
        monotonic=FakeClock(1000.0),
        wake_sender=sender,
        wake_worker=worker,
    )
    yield r, woken
    store.close()


def signed(body: bytes) -> dict[str, str]:
    stamp = str(int(NOW))
    return {TIMESTAMP_HEADER.lower(): stamp, SIGNATURE_HEADER.lower(): sign(SECRET, stamp, body)}


def test_the_rate_limit_holds_any_sixty_seconds() -> None:
    mono = FakeClock(500.0)
    rate = RateLimit(3.9, mono)  # a fraction of an event is none
    assert [rate.allow() for _ in range(4)] == [True, True, True, False]
    mono.t = 559.9
    assert rate.allow() is False
    mono.t = 560.0  # the first three are 60 s old
    assert [rate.allow() for _ in range(4)] == [True, True, True, False]


def test_a_signed_command_is_stored_once_wakes_the_worker_and_the_rate_holds(
    routes: tuple[Routes, Woken],
) -> None:
    r, woken = routes
    bodies = [json.dumps({"message_id": f"m{i}", "text": "@bot help"}).encode() for i in range(3)]
    assert r.handle_command(bodies[0], signed(bodies[0])) == (
        202,
        {"status": "accepted", "seq": 1},
    )
    assert r.handle_command(bodies[0], signed(bodies[0])) == (200, {"status": "duplicate"})
    assert r.handle_command(bodies[1], signed(bodies[1]))[0] == 202
    assert r.handle_command(bodies[2], signed(bodies[2])) == (
        429,
        {"error": "too_many_commands"},
    )
    assert r.handle_command(bodies[2], {})[0] == 401
    assert (woken.worker, woken.sender) == (2, 0)
    assert [c.message_id for c in r.store.unanswered()] == ["m0", "m1"]


def test_the_table_guards_every_route_and_a_store_fault_is_503() -> None:
    def locked(body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, object]]:
        raise StoreUnavailable("locked", "database is locked")

    assert guarded(locked)(b"", {}) == (503, {"error": "state_locked"})


def test_alerts_without_a_token_are_queued_once_and_wake_the_sender(
    routes: tuple[Routes, Woken],
) -> None:
    r, woken = routes
    doc = {
        "version": "4",
        "status": "firing",
        "alerts": [
            {
                "status": "firing",
                "labels": {"alertname": "LedgerDown", "severity": "page"},
                "annotations": {"summary": "down"},
                "startsAt": "2025-11-29T00:00:00Z",
                "fingerprint": "0123abcd",
            }
        ],
    }
    body = json.dumps(doc).encode()
    assert r.handle_alerts(body, {}) == (200, {"queued": 1, "alerts": 1})
    assert r.handle_alerts(body, {}) == (200, {"queued": 0, "alerts": 1})
    assert woken.sender == 1
