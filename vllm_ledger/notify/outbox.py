"""The outbox: a delivery and its states, its bounds, and the statements every step that queues
shares (run inside the caller's transaction): a pending row inserted (settled rows pruned past
``MAX_OUTBOX_ROWS``), the room left under ``MAX_PENDING``, the counters in ``meta``, the oldest
pending row taken for sending and settled, and a delivery's copy with the ``resends`` request
that asked for it."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from vllm_ledger.errors import LedgerError

DeliveryState = Literal["pending", "sending", "sent", "failed", "unknown"]
DELIVERY_STATES: tuple[DeliveryState, ...] = ("pending", "sending", "sent", "failed", "unknown")
MAX_OUTBOX_ROWS = 10_000  # the oldest settled rows are pruned past this
MAX_PENDING = 1_000  # notifications waiting to be sent; past this new ones are dropped, counted
MAX_TEXT_CHARS = 16_000


@dataclass(frozen=True)
class Delivery:
    id: int
    kind: str
    text: str
    state: str
    reason: str | None
    http_status: int | None
    resend_of: int | None
    created_ts: float
    updated_ts: float


DELIVERY_COLS = "id, kind, text, state, reason, http_status, resend_of, created_ts, updated_ts"


class OutboxFull(LedgerError):
    """The outbox holds ``MAX_PENDING`` deliveries: nothing was queued or recorded."""


@dataclass(frozen=True)
class Resent:
    """What a resend request queued: the copy's delivery id, the delivery it copies, the copy's
    state now (``gone`` once pruned), and whether an earlier try of the request queued it."""

    copy_id: int
    resend_of: int
    state: str
    already: bool


def insert(
    db: sqlite3.Connection,
    clock: Callable[[], float],
    kind: str,
    text: str,
    resend_of: int | None = None,
    topic: str | None = None,
) -> int:
    """Insert one pending notification (the caller checked the bound); its id."""
    now = clock()
    cur = db.execute(
        "INSERT INTO outbox(kind, text, state, resend_of, created_ts, updated_ts, topic) "
        "VALUES (?, ?, 'pending', ?, ?, ?, ?)",
        (kind, text[:MAX_TEXT_CHARS], resend_of, now, now, topic),
    )
    total = db.execute("SELECT count(*) FROM outbox").fetchone()[0]
    if total > MAX_OUTBOX_ROWS:
        db.execute(
            "DELETE FROM outbox WHERE id IN (SELECT id FROM outbox "
            "WHERE state NOT IN ('pending', 'sending') ORDER BY id LIMIT ?)",
            (total - MAX_OUTBOX_ROWS,),
        )
    return int(cur.lastrowid or 0)


def pending(db: sqlite3.Connection) -> int:
    """How many deliveries wait to be sent."""
    return int(db.execute("SELECT count(*) FROM outbox WHERE state = 'pending'").fetchone()[0])


def room(db: sqlite3.Connection) -> int:
    """How many more may be queued before the outbox is full (``MAX_PENDING``)."""
    return MAX_PENDING - pending(db)


def add(db: sqlite3.Connection, key: str, n: int) -> None:
    """Add ``n`` to the counter ``key`` of ``meta``."""
    db.execute("UPDATE meta SET value = value + ? WHERE key = ?", (n, key))


def dropped(db: sqlite3.Connection, n: int = 1) -> None:
    """Count ``n`` notifications dropped for a full outbox."""
    add(db, "dropped_total", n)


def copy(db: sqlite3.Connection, clock: Callable[[], float], delivery_id: int) -> int | None:
    """A copy of a delivery queued anew (``resend_of`` it); None when it is not kept."""
    row = db.execute("SELECT kind, text FROM outbox WHERE id = ?", (delivery_id,)).fetchone()
    if row is None:
        return None
    return insert(db, clock, row[0], row[1], resend_of=delivery_id)


def resent(db: sqlite3.Connection, request_id: str) -> Resent | None:
    """The copy an earlier try of ``request_id`` queued, with its state now; None if none."""
    row = db.execute(
        "SELECT r.copy_id, r.delivery_id, o.state FROM resends r "
        "LEFT JOIN outbox o ON o.id = r.copy_id WHERE r.request_id = ?",
        (request_id,),
    ).fetchone()
    if row is None:
        return None
    return Resent(int(row[0]), int(row[1]), str(row[2] or "gone"), already=True)


def record_resend(
    db: sqlite3.Connection, now: float, request_id: str, delivery_id: int, copy_id: int
) -> None:
    """Record a resend request with the copy it queued; requests for deliveries no longer kept
    are forgotten."""
    db.execute("DELETE FROM resends WHERE delivery_id < (SELECT min(id) FROM outbox)")
    db.execute("INSERT INTO resends VALUES (?, ?, ?, ?)", (request_id, delivery_id, copy_id, now))


def take_pending(db: sqlite3.Connection, clock: Callable[[], float]) -> Delivery | None:
    """The oldest pending delivery, now marked ``sending``; None when none waits."""
    row = db.execute(
        f"SELECT {DELIVERY_COLS} FROM outbox WHERE state = 'pending' ORDER BY id LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    db.execute(
        "UPDATE outbox SET state = 'sending', updated_ts = ? WHERE id = ?", (clock(), row[0])
    )
    return Delivery(*row)


__all__ = [
    "DELIVERY_COLS",
    "DELIVERY_STATES",
    "MAX_OUTBOX_ROWS",
    "MAX_PENDING",
    "Delivery",
    "DeliveryState",
    "OutboxFull",
    "Resent",
    "add",
    "copy",
    "dropped",
    "insert",
    "pending",
    "record_resend",
    "resent",
    "room",
    "take_pending",
]
