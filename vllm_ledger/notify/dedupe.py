"""Keys handled once, each recorded in the transaction that queues its notification: ``seen``
(Alertmanager alerts by fingerprint, status and start, and the notes of alerts it left out)
and ``once`` (each budget's soft and hard message per period, each digest per day). One dropped
for a full outbox is not recorded (counted), so it is made again at the next chance."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import NamedTuple

from vllm_ledger.notify import outbox

ALERTS_KEEP_S = 7 * 86_400.0


class Once(NamedTuple):
    """A notification made once: its key, its text (None: the key is recorded only) and how
    long the key is kept (Unix seconds)."""

    key: str
    text: str | None
    keep_until_ts: float


class Queued(NamedTuple):
    """What ``queue_alerts`` did: the new delivery ids (in order), how many were dropped for a
    full outbox, and the note's delivery id when the note was queued."""

    ids: list[int]
    dropped: int
    note_id: int | None = None


def queue_alerts(
    db: sqlite3.Connection, clock: Callable[[], float], items: Sequence[tuple[str, str, int]]
) -> Queued:
    """Each ``(key, text, not_shown)`` whose key was not seen, queued and recorded; one with
    ``not_shown`` (how many alerts Alertmanager left out) is the note, counted in ``meta``."""
    now = clock()
    db.execute("DELETE FROM seen WHERE seen_ts < ?", (now - ALERTS_KEEP_S,))
    room = outbox.room(db)
    queued: list[int] = []
    dropped = 0
    note_id = None
    for key, text, not_shown in items:
        if db.execute("SELECT 1 FROM seen WHERE key = ?", (key,)).fetchone():
            continue
        if room <= 0:
            dropped += 1
            continue
        db.execute("INSERT INTO seen VALUES (?, ?)", (key, now))
        queued.append(outbox.insert(db, clock, "alert", text))
        room -= 1
        if not_shown:
            note_id = queued[-1]
            outbox.add(db, "not_shown_notes_total", 1)
            outbox.add(db, "not_shown_alerts_total", not_shown)
    if dropped:
        outbox.dropped(db, dropped)
    return Queued(queued, dropped, note_id)


def queue_once(
    db: sqlite3.Connection, clock: Callable[[], float], kind: str, items: Sequence[Once]
) -> Queued:
    """Each item whose key is not in ``once`` queued (a ``text`` of None: recorded only) and
    its key recorded."""
    now = clock()
    db.execute("DELETE FROM once WHERE keep_until_ts < ?", (now,))
    room = outbox.room(db)
    queued: list[int] = []
    dropped = 0
    for item in items:
        if done_once(db, item.key):
            continue
        new = None
        if item.text is not None:
            if room <= 0:
                dropped += 1
                continue
            new = outbox.insert(db, clock, kind, item.text)
            queued.append(new)
            room -= 1
        db.execute(
            "INSERT INTO once VALUES (?, ?, ?, ?, ?)",
            (item.key, kind, new, now, item.keep_until_ts),
        )
    if dropped:
        outbox.dropped(db, dropped)
    return Queued(queued, dropped)


def done_once(db: sqlite3.Connection, key: str) -> bool:
    """Whether ``key`` is recorded in ``once``."""
    return db.execute("SELECT 1 FROM once WHERE key = ?", (key,)).fetchone() is not None


__all__ = ["ALERTS_KEEP_S", "Once", "Queued", "done_once", "queue_alerts", "queue_once"]
