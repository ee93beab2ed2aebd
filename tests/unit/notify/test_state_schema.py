"""The notifier state file's migrations: a file of an earlier schema gains the later steps in
one transaction and keeps its rows."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.ledgers import FakeClock
from vllm_ledger.notify import state_schema
from vllm_ledger.notify.outbox import Resent
from vllm_ledger.notify.state_schema import MIGRATIONS, migrate
from vllm_ledger.notify.store import Store

STORE_START = 1_764_400_000.0  # the clock every store here starts on


def test_a_state_file_of_the_earlier_schema_gains_the_new_tables_and_keeps_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.sqlite"
    with monkeypatch.context() as m:
        m.setattr(state_schema, "MIGRATIONS", state_schema.MIGRATIONS[:2])
        old = Store(path, clock=FakeClock(STORE_START))
        assert old.queue("reply", "kept") == 1
        old.close()
    s = Store(path, clock=FakeClock(STORE_START))
    try:
        with s._lock:
            names = [r[0] for r in s._db.execute("SELECT name FROM migrations ORDER BY name")]
        assert names == [
            "0001_initial",
            "0002_outbox_topic",
            "0003_resends_and_not_shown",
            "0004_once_and_budget_levels",
        ]
        summary = s.summary()
        assert summary["pending"] == 1
        assert (summary["not_shown_notes_total"], summary["not_shown_alerts_total"]) == (0, 0)
        assert s.resend(1, request_id="r1") == Resent(2, 1, "pending", already=False)
    finally:
        s.close()


def test_every_step_is_applied_once_each_named_with_the_time() -> None:
    db = sqlite3.connect(":memory:", isolation_level=None)
    ticks = iter(range(100, 200))
    migrate(db, lambda: float(next(ticks)))
    migrate(db, lambda: float(next(ticks)))  # up to date: nothing again
    rows = db.execute("SELECT name, applied_ts FROM migrations ORDER BY name").fetchall()
    assert rows == [(name, 100.0 + i) for i, (name, _sql) in enumerate(MIGRATIONS)]
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    assert meta == {
        "cursor": 0,
        "dropped_total": 0,
        "not_shown_notes_total": 0,
        "not_shown_alerts_total": 0,
    }


def test_a_failing_step_leaves_the_file_as_it_was_in_the_callers_transaction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = sqlite3.connect(":memory:", isolation_level=None)
    monkeypatch.setattr(state_schema, "MIGRATIONS", (*MIGRATIONS[:1], ("0002_bad", "NOT SQL")))
    db.execute("BEGIN IMMEDIATE")
    with pytest.raises(sqlite3.OperationalError):
        migrate(db, lambda: 1.0)
    db.execute("ROLLBACK")
    tables = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    assert tables == []
