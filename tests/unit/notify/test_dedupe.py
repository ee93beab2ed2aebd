"""Keys handled once, on a migrated in-memory file: a key seen is not queued again, one
dropped for a full outbox is not recorded, a key of ``once`` kept until its time."""

from __future__ import annotations

import sqlite3

import pytest

from vllm_ledger.notify import dedupe, outbox
from vllm_ledger.notify.dedupe import Once, Queued
from vllm_ledger.notify.state_schema import migrate


def _db() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", isolation_level=None)
    migrate(db, lambda: 1.0)
    return db


def test_an_alert_seen_is_not_queued_again_and_a_note_is_counted() -> None:
    db = _db()
    items = [("a", "A", 0), ("note", "NOT SHOWN", 7)]
    assert dedupe.queue_alerts(db, lambda: 10.0, items) == Queued([1, 2], 0, 2)
    assert dedupe.queue_alerts(db, lambda: 11.0, items) == Queued([], 0, None)
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    assert (meta["not_shown_notes_total"], meta["not_shown_alerts_total"]) == (1, 7)
    later = 10.0 + dedupe.ALERTS_KEEP_S + 1  # a key is forgotten after a week
    assert dedupe.queue_alerts(db, lambda: later, items[:1]).ids == [3]


def test_a_key_dropped_for_a_full_outbox_is_not_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    db = _db()
    monkeypatch.setattr(outbox, "MAX_PENDING", 0)
    assert dedupe.queue_once(db, lambda: 1.0, "budget", [Once("k", "SOFT", 99.0)]) == Queued([], 1)
    assert not dedupe.done_once(db, "k")
    monkeypatch.setattr(outbox, "MAX_PENDING", 10)
    assert dedupe.queue_once(db, lambda: 2.0, "budget", [Once("k", "SOFT", 99.0)]).ids == [1]
    assert dedupe.done_once(db, "k")


def test_a_once_key_is_kept_until_its_time_and_may_be_recorded_alone() -> None:
    db = _db()
    assert dedupe.queue_once(db, lambda: 1.0, "digest", [Once("d", None, 5.0)]) == Queued([], 0)
    assert dedupe.done_once(db, "d")
    assert dedupe.queue_once(db, lambda: 4.0, "digest", [Once("d", "X", 9.0)]).ids == []
    assert dedupe.queue_once(db, lambda: 6.0, "digest", [Once("d", "X", 9.0)]).ids == [1]
