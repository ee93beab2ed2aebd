"""Reading the state file, as ``notifier status`` does while the notifier runs (opened
``mode=ro``) and as the status reply does: deliveries that failed, the newest ones, the counts,
health, the digests posted and the budgets at soft or hard. A table a state file from before
budgets lacks reads as empty."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from vllm_ledger.notify.outbox import DELIVERY_COLS, DELIVERY_STATES, Delivery


class BudgetLevel(NamedTuple):
    """One budget of a host at soft or hard, as ``notifier status`` lists it (``level``
    ``problem`` and ``more``: the host's notes, ``notify/budgets.levels``)."""

    name: str
    place: str  # our label of the host (its node ports)
    who: str  # the label's kind and value, as the message names it
    figure: str
    level: str
    used: float
    limit_value: float
    fraction: float
    end_ts: int
    projected: float | None


@contextmanager
def open_read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """The state file ``mode=ro`` (for ``notifier status``, while the notifier runs)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        yield db
    finally:
        db.close()


def read_failures(db: sqlite3.Connection, limit: int = 5) -> list[Delivery]:
    """The newest failed or unknown deliveries that no later resend has delivered."""
    rows = db.execute(
        f"SELECT {DELIVERY_COLS} FROM outbox o WHERE state IN ('failed', 'unknown') "
        "AND NOT EXISTS (SELECT 1 FROM outbox r WHERE r.resend_of = o.id AND r.state = 'sent') "
        "ORDER BY id DESC LIMIT ?",
        (limit,),
    ).fetchall()
    return [Delivery(*r) for r in rows]


def read_summary(db: sqlite3.Connection) -> dict[str, int]:
    counts: dict[str, int] = {s: 0 for s in DELIVERY_STATES}
    for state, n in db.execute("SELECT state, count(*) FROM outbox GROUP BY state"):
        counts[str(state)] = int(n)
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    return {
        **counts,
        "cursor": int(meta.get("cursor", 0)),
        "dropped_total": int(meta.get("dropped_total", 0)),
        "not_shown_notes_total": int(meta.get("not_shown_notes_total", 0)),
        "not_shown_alerts_total": int(meta.get("not_shown_alerts_total", 0)),
        "unanswered": int(
            db.execute(
                "SELECT count(*) FROM inbox WHERE seq > (SELECT value FROM meta WHERE key='cursor')"
            ).fetchone()[0]
        ),
    }


def read_recent(db: sqlite3.Connection, limit: int = 20) -> list[Delivery]:
    rows = db.execute(
        f"SELECT {DELIVERY_COLS} FROM outbox ORDER BY id DESC LIMIT ?", (limit,)
    ).fetchall()
    return [Delivery(*r) for r in rows]


def read_health(db: sqlite3.Connection) -> dict[int, tuple[str, float]]:
    return {int(p): (str(s), float(t)) for p, s, t in db.execute("SELECT * FROM health")}


def read_digests(db: sqlite3.Connection, limit: int = 3) -> list[tuple[str, int | None, float]]:
    """The newest digests posted: (key, delivery id, queued at); [] before budgets."""
    try:
        rows = db.execute(
            "SELECT key, delivery_id, created_ts FROM once WHERE kind = 'digest' "
            "ORDER BY created_ts DESC, key DESC LIMIT ?",
            (limit,),
        ).fetchall()
    except sqlite3.OperationalError:  # no such table: the notifier has not run this version
        return []
    return [(str(k), None if d is None else int(d), float(t)) for k, d, t in rows]


def read_budget_levels(db: sqlite3.Connection) -> list[tuple[BudgetLevel, float]]:
    """Every host's budgets at soft or hard as last polled, hard first, each with the time it
    was polled; [] for a state file from before budgets."""
    try:
        rows = db.execute(
            "SELECT name, place, who, figure, level, used, limit_value, fraction, end_ts, "
            "projected, updated_ts FROM budget_levels "
            "ORDER BY level IN ('problem', 'more') DESC, level = 'hard' DESC, fraction DESC, "
            "place, name"
        ).fetchall()
    except sqlite3.OperationalError:  # no such table: the notifier has not run this version
        return []
    return [(BudgetLevel(*r[:10]), float(r[10])) for r in rows]


__all__ = [
    "BudgetLevel",
    "open_read_only",
    "read_budget_levels",
    "read_digests",
    "read_failures",
    "read_health",
    "read_recent",
    "read_summary",
]
