"""Reading the state file as ``notifier status`` does: opened ``mode=ro``, the counts, the
failures no resend delivered, and a file from before budgets read as empty."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from vllm_ledger.notify import outbox
from vllm_ledger.notify.state_read import (
    open_read_only,
    read_budget_levels,
    read_digests,
    read_failures,
    read_health,
    read_recent,
    read_summary,
)
from vllm_ledger.notify.state_schema import MIGRATIONS, migrate


def _file(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    migrate(db, lambda: 1.0)
    return db


def test_counts_failures_and_recent_read_mode_ro(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    db = _file(path)
    a = outbox.insert(db, lambda: 1.0, "reply", "a")
    b = outbox.insert(db, lambda: 1.0, "reply", "b")
    db.execute("UPDATE outbox SET state = 'failed' WHERE id IN (?, ?)", (a, b))
    copy = outbox.copy(db, lambda: 2.0, a)
    db.execute("UPDATE outbox SET state = 'sent' WHERE id = ?", (copy,))
    db.execute("INSERT INTO health VALUES (19001, 'up', 3.0)")
    db.close()
    with open_read_only(path) as ro:
        assert [d.id for d in read_failures(ro)] == [b]  # a was resent and delivered
        assert [d.text for d in read_recent(ro)] == ["a", "b", "a"][::-1]
        summary = read_summary(ro)
        assert (summary["failed"], summary["sent"], summary["unanswered"]) == (2, 1, 0)
        assert read_health(ro) == {19001: ("up", 3.0)}
        with pytest.raises(sqlite3.OperationalError):
            ro.execute("DELETE FROM outbox")


def test_a_file_from_before_budgets_reads_no_digests_or_levels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vllm_ledger.notify import state_schema

    monkeypatch.setattr(state_schema, "MIGRATIONS", MIGRATIONS[:3])
    db = _file(tmp_path / "old.sqlite")
    assert read_digests(db) == [] and read_budget_levels(db) == []
