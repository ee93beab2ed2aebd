"""The outbox's statements on a migrated in-memory file: a row inserted is pending and cut to
its bound, settled rows are pruned past the row bound, the room left, a copy and its request."""

from __future__ import annotations

import sqlite3

import pytest

from vllm_ledger.notify import outbox
from vllm_ledger.notify.outbox import Delivery, Resent
from vllm_ledger.notify.state_schema import migrate


def _db() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", isolation_level=None)
    migrate(db, lambda: 1.0)
    return db


def test_an_inserted_row_is_pending_cut_to_its_bound_and_taken_for_sending() -> None:
    db = _db()
    first = outbox.insert(db, lambda: 5.0, "reply", "x" * (outbox.MAX_TEXT_CHARS + 10))
    assert (outbox.pending(db), outbox.room(db)) == (1, outbox.MAX_PENDING - 1)
    taken = outbox.take_pending(db, lambda: 6.0)
    assert taken == Delivery(
        first, "reply", "x" * outbox.MAX_TEXT_CHARS, "pending", None, None, None, 5.0, 5.0
    )
    assert db.execute("SELECT state, updated_ts FROM outbox").fetchall() == [("sending", 6.0)]
    assert outbox.take_pending(db, lambda: 7.0) is None


def test_settled_rows_are_pruned_past_the_row_bound_never_pending_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(outbox, "MAX_OUTBOX_ROWS", 2)
    db = _db()
    for text in ("a", "b"):
        outbox.insert(db, lambda: 1.0, "reply", text)
    db.execute("UPDATE outbox SET state = 'sent' WHERE text = 'a'")
    outbox.insert(db, lambda: 1.0, "reply", "c")
    outbox.insert(db, lambda: 1.0, "reply", "d")  # nothing settled left to prune
    assert [r[0] for r in db.execute("SELECT text FROM outbox ORDER BY id")] == ["b", "c", "d"]


def test_a_copy_and_its_request_are_found_again_and_counters_add_up() -> None:
    db = _db()
    d = outbox.insert(db, lambda: 1.0, "alert", "FIRING")
    assert outbox.copy(db, lambda: 2.0, d + 99) is None
    new = outbox.copy(db, lambda: 2.0, d)
    assert new is not None
    assert db.execute("SELECT resend_of FROM outbox WHERE id = ?", (new,)).fetchone() == (d,)
    assert outbox.resent(db, "r1") is None
    outbox.record_resend(db, 3.0, "r1", d, new)
    assert outbox.resent(db, "r1") == Resent(new, d, "pending", already=True)
    outbox.dropped(db, 2)
    outbox.add(db, "dropped_total", 1)
    assert db.execute("SELECT value FROM meta WHERE key = 'dropped_total'").fetchone() == (3,)
