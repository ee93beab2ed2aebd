"""The notifier's durable state: one SQLite file beside the config, and every SQL statement.

One process writes it (the running notifier, through one connection behind a lock); the
``notifier status`` command reads it ``mode=ro``. WAL, ``synchronous=NORMAL``: a crash of the
process loses nothing committed. Each step that must not half-happen is one transaction:

- ``inbox``: each accepted command by its platform message id (``UNIQUE``: a replayed id is
  never stored twice), numbered in arrival order (``seq``). ``meta.cursor`` is the ``seq`` of
  the last command answered; answering a command (its reply queued in the outbox, the command
  marked answered, the cursor moved) is one transaction, so after a crash the commands past
  the cursor are answered once, in order, and none before it again.
- ``outbox``: each notification with its delivery id (``id``) and state ``pending`` ->
  ``sending`` (committed before the HTTP request) -> ``sent`` | ``failed`` (with a reason
  code and the HTTP status). A row still ``sending`` when the notifier starts was interrupted
  mid-delivery: it becomes ``unknown`` (it may or may not have arrived) and is never sent
  again by itself. Only ``resend`` queues a copy (a new id, ``resend_of`` the old one).
- ``seen``: keys handled once: Alertmanager alerts by fingerprint, status and start time, and
  the request ids of ``resend`` requests.
- ``health``: the last health reported per node port, so a restart does not announce again.
- ``migrations``: the append-only list of schema steps applied.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

DeliveryState = Literal["pending", "sending", "sent", "failed", "unknown"]
DELIVERY_STATES: tuple[DeliveryState, ...] = ("pending", "sending", "sent", "failed", "unknown")
MAX_OUTBOX_ROWS = 10_000  # the oldest settled rows are pruned past this
MAX_PENDING = 1_000  # notifications waiting to be sent; past this new ones are dropped, counted
MAX_INBOX_ROWS = 100_000  # answered commands kept (ids older than a day are pruned too)
INBOX_KEEP_S = 86_400.0  # far beyond the 5 min a signed request stays valid
ALERTS_KEEP_S = 7 * 86_400.0
MAX_TEXT_CHARS = 16_000

MIGRATIONS: tuple[tuple[str, str], ...] = (
    (
        "0001_initial",
        """
        CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
        CREATE TABLE inbox(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            message_id TEXT NOT NULL UNIQUE,
            command TEXT NOT NULL,
            arg INTEGER,
            lang TEXT NOT NULL,
            received_ts REAL NOT NULL,
            answered_ts REAL);
        CREATE TABLE outbox(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            text TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN
                ('pending', 'sending', 'sent', 'failed', 'unknown')),
            reason TEXT,
            http_status INTEGER,
            resend_of INTEGER,
            created_ts REAL NOT NULL,
            updated_ts REAL NOT NULL);
        CREATE INDEX outbox_state ON outbox(state, id);
        CREATE TABLE seen(key TEXT PRIMARY KEY, seen_ts REAL NOT NULL);
        CREATE TABLE health(
            port INTEGER PRIMARY KEY, state TEXT NOT NULL, since_ts REAL NOT NULL);
        INSERT INTO meta(key, value) VALUES ('cursor', 0), ('dropped_total', 0);
        """,
    ),
)


@dataclass(frozen=True)
class Command:
    seq: int
    message_id: str
    command: str
    arg: int | None
    lang: str
    received_ts: float


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


_DELIVERY_COLS = "id, kind, text, state, reason, http_status, resend_of, created_ts, updated_ts"


def state_path(config: Path) -> Path:
    """The state file beside the config: ``private.json`` -> ``private.notifier.sqlite``."""
    return config.with_name(config.stem + ".notifier.sqlite")


class Store:
    """The one writer. Every method is one transaction; the lock makes threads take turns."""

    def __init__(self, path: Path, *, clock: Callable[[], float]) -> None:
        self.path = path
        self.clock = clock
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        with self._tx() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS migrations(name TEXT PRIMARY KEY, applied_ts REAL)"
            )
            done = {r[0] for r in db.execute("SELECT name FROM migrations")}
            for name, sql in MIGRATIONS:
                if name not in done:
                    for stmt in sql.split(";"):
                        if stmt.strip():
                            db.execute(stmt)
                    db.execute("INSERT INTO migrations VALUES (?, ?)", (name, self.clock()))

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ---- start-up ---------------------------------------------------------------------

    def mark_interrupted(self) -> list[int]:
        """Rows left ``sending`` by a process that died mid-delivery become ``unknown``."""
        with self._tx() as db:
            ids = [r[0] for r in db.execute("SELECT id FROM outbox WHERE state = 'sending'")]
            db.execute(
                "UPDATE outbox SET state = 'unknown', reason = 'interrupted', updated_ts = ? "
                "WHERE state = 'sending'",
                (self.clock(),),
            )
        return ids

    # ---- commands in ------------------------------------------------------------------

    def accept(self, message_id: str, command: str, arg: int | None, lang: str) -> int | None:
        """Store a command; None when its message id was seen before (nothing is done)."""
        with self._tx() as db:
            seen = db.execute("SELECT 1 FROM inbox WHERE message_id = ?", (message_id,))
            if seen.fetchone() is not None:  # checked first: a replay uses up no seq
                return None
            cur = db.execute(
                "INSERT INTO inbox(message_id, command, arg, lang, received_ts) "
                "VALUES (?, ?, ?, ?, ?)",
                (message_id, command, arg, lang, self.clock()),
            )
            return int(cur.lastrowid) if cur.lastrowid else None

    def cursor(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT value FROM meta WHERE key='cursor'").fetchone()[0])

    def unanswered(self, limit: int = 100) -> list[Command]:
        """Commands past the cursor, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, message_id, command, arg, lang, received_ts FROM inbox "
                "WHERE seq > (SELECT value FROM meta WHERE key='cursor') ORDER BY seq LIMIT ?",
                (limit,),
            ).fetchall()
        return [Command(*r) for r in rows]

    def answer(self, cmd: Command, reply: str | None) -> int | None:
        """Queue the reply (if any), mark the command answered, move the cursor: one step."""
        with self._tx() as db:
            delivery = self._queue(db, "reply", reply) if reply is not None else None
            db.execute("UPDATE inbox SET answered_ts = ? WHERE seq = ?", (self.clock(), cmd.seq))
            db.execute("UPDATE meta SET value = ? WHERE key = 'cursor'", (cmd.seq,))
            db.execute(
                "DELETE FROM inbox WHERE seq <= ? AND (received_ts < ? OR seq <= ?)",
                (cmd.seq, self.clock() - INBOX_KEEP_S, cmd.seq - MAX_INBOX_ROWS),
            )
        return delivery

    # ---- notifications out ------------------------------------------------------------

    def _queue(
        self, db: sqlite3.Connection, kind: str, text: str, resend_of: int | None = None
    ) -> int | None:
        pending = db.execute("SELECT count(*) FROM outbox WHERE state = 'pending'").fetchone()[0]
        if pending >= MAX_PENDING:
            db.execute("UPDATE meta SET value = value + 1 WHERE key = 'dropped_total'")
            return None
        now = self.clock()
        cur = db.execute(
            "INSERT INTO outbox(kind, text, state, resend_of, created_ts, updated_ts) "
            "VALUES (?, ?, 'pending', ?, ?, ?)",
            (kind, text[:MAX_TEXT_CHARS], resend_of, now, now),
        )
        total = db.execute("SELECT count(*) FROM outbox").fetchone()[0]
        if total > MAX_OUTBOX_ROWS:
            db.execute(
                "DELETE FROM outbox WHERE id IN (SELECT id FROM outbox "
                "WHERE state NOT IN ('pending', 'sending') ORDER BY id LIMIT ?)",
                (total - MAX_OUTBOX_ROWS,),
            )
        return int(cur.lastrowid) if cur.lastrowid else None

    def queue(self, kind: str, text: str) -> int | None:
        """A new notification; its delivery id, or None when the outbox is full (counted)."""
        with self._tx() as db:
            return self._queue(db, kind, text)

    def queue_alert(self, key: str, text: str) -> int | None:
        """An alert notification, unless ``key`` (fingerprint, status, start) was seen."""
        with self._tx() as db:
            now = self.clock()
            db.execute("DELETE FROM seen WHERE seen_ts < ?", (now - ALERTS_KEEP_S,))
            cur = db.execute("INSERT OR IGNORE INTO seen VALUES (?, ?)", (key, now))
            if cur.rowcount != 1:
                return None
            return self._queue(db, "alert", text)

    def resend(self, delivery_id: int, request_key: str | None = None) -> int | None:
        """A copy of a delivery, queued anew; None when no such delivery is kept, or when
        ``request_key`` (a resend request's id) was handled before."""
        with self._tx() as db:
            if request_key is not None:
                cur = db.execute(
                    "INSERT OR IGNORE INTO seen VALUES (?, ?)", (request_key, self.clock())
                )
                if cur.rowcount != 1:
                    return None
            row = db.execute(
                "SELECT kind, text FROM outbox WHERE id = ?", (delivery_id,)
            ).fetchone()
            if row is None:
                return None
            return self._queue(db, row[0], row[1], resend_of=delivery_id)

    def next_pending(self) -> Delivery | None:
        """The oldest pending delivery, now marked ``sending`` (committed before the send)."""
        with self._tx() as db:
            row = db.execute(
                f"SELECT {_DELIVERY_COLS} FROM outbox WHERE state = 'pending' ORDER BY id LIMIT 1"
            ).fetchone()
            if row is None:
                return None
            db.execute(
                "UPDATE outbox SET state = 'sending', updated_ts = ? WHERE id = ?",
                (self.clock(), row[0]),
            )
        return Delivery(*row)

    def settle(
        self, delivery_id: int, state: str, reason: str | None, http_status: int | None
    ) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE outbox SET state = ?, reason = ?, http_status = ?, updated_ts = ? "
                "WHERE id = ? AND state = 'sending'",
                (state, reason, http_status, self.clock(), delivery_id),
            )

    def failures(self, limit: int = 5) -> list[Delivery]:
        """What the next status reply shows: deliveries that failed or ended unknown."""
        with self._lock:
            return read_failures(self._db, limit)

    def summary(self) -> dict[str, int]:
        with self._lock:
            return read_summary(self._db)

    # ---- health -----------------------------------------------------------------------

    def health_states(self) -> dict[int, str]:
        with self._lock:
            return dict(self._db.execute("SELECT port, state FROM health").fetchall())

    def record_health(self, port: int, state: str, text: str | None) -> int | None:
        """Store the reported state; queue ``text`` with it (one transaction)."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO health VALUES (?, ?, ?) ON CONFLICT(port) DO UPDATE "
                "SET state = excluded.state, since_ts = excluded.since_ts",
                (port, state, self.clock()),
            )
            return self._queue(db, "health", text) if text is not None else None


# ---- reading (notifier status; the status reply) ------------------------------------------


def read_failures(db: sqlite3.Connection, limit: int = 5) -> list[Delivery]:
    """The newest failed or unknown deliveries that no later resend has delivered."""
    rows = db.execute(
        f"SELECT {_DELIVERY_COLS} FROM outbox o WHERE state IN ('failed', 'unknown') "
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
        "unanswered": int(
            db.execute(
                "SELECT count(*) FROM inbox WHERE seq > (SELECT value FROM meta WHERE key='cursor')"
            ).fetchone()[0]
        ),
    }


def read_recent(db: sqlite3.Connection, limit: int = 20) -> list[Delivery]:
    rows = db.execute(
        f"SELECT {_DELIVERY_COLS} FROM outbox ORDER BY id DESC LIMIT ?", (limit,)
    ).fetchall()
    return [Delivery(*r) for r in rows]


def read_health(db: sqlite3.Connection) -> dict[int, tuple[str, float]]:
    return {int(p): (str(s), float(t)) for p, s, t in db.execute("SELECT * FROM health")}


@contextmanager
def open_read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """The state file ``mode=ro`` (for ``notifier status``, while the notifier runs)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        yield db
    finally:
        db.close()


__all__ = [
    "DELIVERY_STATES",
    "MAX_OUTBOX_ROWS",
    "MAX_PENDING",
    "Command",
    "Delivery",
    "DeliveryState",
    "Store",
    "open_read_only",
    "read_failures",
    "read_health",
    "read_recent",
    "read_summary",
    "state_path",
]
