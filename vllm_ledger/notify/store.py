"""The notifier's durable state: one SQLite file beside the config, and its one writer.

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
  the notes of alerts Alertmanager left out of a group notification (``alerts.NotShown``,
  counted in ``meta``). A key is recorded only with its notification queued: an alert or note
  dropped from a full outbox stays unseen, so Alertmanager's retry or repeat brings it.
- ``resends``: each ``/resend`` request id with the delivery it asked for and the copy it
  queued, committed with the copy: the same request again (a retry after a crash or a lost
  answer) is answered with that copy, and nothing more is queued.
- Health notifications are never dropped: each carries its instance (``topic``), and a newer
  transition to the same state replaces a pending one, so an instance has at most one pending
  DOWN and one pending UP whatever the outbox holds.
- ``health``: the last health reported per node port, so a restart does not announce again.
- ``once``: keys of notifications made once, kept until their ``keep_until_ts``: each budget's
  soft and hard message per period (``notify/budgets.py``) and each digest per day
  (``notify/digest.py``). A key is recorded in the transaction that queues its message; one
  dropped for a full outbox is not, so it is made again at the next chance.
- ``budget_levels``: each host's budgets at soft or hard as last polled, for
  ``notifier status``.
- ``migrations``: the append-only list of schema steps applied.

Every SQLite fault (the file locked by another process, read-only, a full disk, damage) is
raised as ``StoreUnavailable`` with a ``reason``; the transaction it hit left nothing behind.
``open_store`` refuses, before SQLite writes anything, a state file that is not a regular
file, has no write permission, or fails ``PRAGMA quick_check`` (``StateFileError``).

``exit_at``: a boundary name (``accept``, ``answer``, ``sending``, ``settle``, ``resend``);
right after that transaction commits, the process ends with ``os._exit`` (the crash tests).

Beside it: the tables and their migrations (``state_schema.py``), the outbox's statements
(``outbox.py``), the keys handled once (``dedupe.py``), the reads for ``notifier status``
(``state_read.py``), and the file's checks and faults (``state_file.py``).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from vllm_ledger.format.schema import transaction
from vllm_ledger.notify import dedupe, outbox
from vllm_ledger.notify.dedupe import Once, Queued
from vllm_ledger.notify.outbox import Delivery, OutboxFull, Resent
from vllm_ledger.notify.state_file import (
    StateFileError,
    StoreUnavailable,
    check_state_file,
    fault_of,
)
from vllm_ledger.notify.state_read import BudgetLevel, read_failures, read_summary
from vllm_ledger.notify.state_schema import migrate

Boundary = Literal["accept", "answer", "sending", "settle", "resend"]
BOUNDARIES: tuple[Boundary, ...] = ("accept", "answer", "sending", "settle", "resend")
BUSY_TIMEOUT_MS = 2000  # how long a write waits for another process's lock
LOCK_WAIT_S = 5.0  # how long a caller waits for another thread's transaction
MAX_INBOX_ROWS = 100_000  # answered commands kept (ids older than a day are pruned too)
INBOX_KEEP_S = 86_400.0  # far beyond the 5 min a signed request stays valid


@dataclass(frozen=True)
class Command:
    seq: int
    message_id: str
    command: str
    arg: int | None
    lang: str
    received_ts: float


def open_store(path: Path, *, clock: Callable[[], float], exit_at: str | None = None) -> Store:
    """The store of ``path``, checked first; ``StateFileError`` names a file it cannot use."""
    check_state_file(path)
    try:
        store = Store(path, clock=clock, exit_at=exit_at)
    except (sqlite3.Error, StoreUnavailable) as exc:
        reason = exc.reason if isinstance(exc, StoreUnavailable) else fault_of(exc)
        what = {
            "read_only": "is read-only (or its folder is)",
            "damaged": "is damaged",
            "locked": "is locked by another process",
        }.get(reason, "cannot be used")
        raise StateFileError(path, f"{what} ({exc})") from exc
    try:
        bad = store.quick_check()
    except StoreUnavailable as exc:
        store.close()
        raise StateFileError(path, f"is damaged ({exc})") from exc
    if bad is not None:
        store.close()
        raise StateFileError(path, f"is damaged (quick_check: {bad[:100]})")
    return store


class Store:
    """The one writer. Every method is one transaction; the lock makes threads take turns."""

    def __init__(
        self,
        path: Path,
        *,
        clock: Callable[[], float],
        exit_at: str | None = None,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    ) -> None:
        self.path = path
        self.clock = clock
        self.exit_at = exit_at
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            with self._tx() as db:
                migrate(db, self.clock)
        except BaseException:
            self._db.close()
            raise

    @contextmanager
    def _locked(self) -> Iterator[sqlite3.Connection]:
        """The connection, this thread's turn; a SQLite fault as ``StoreUnavailable``."""
        if not self._lock.acquire(timeout=LOCK_WAIT_S):
            raise StoreUnavailable("locked", "another transaction of this process is waiting")
        try:
            yield self._db
        except sqlite3.Error as exc:
            raise StoreUnavailable(fault_of(exc), str(exc)) from exc
        finally:
            self._lock.release()

    def _passed(self, boundary: Boundary) -> None:
        """A boundary's transaction committed its write: the crash tests' exit point."""
        if boundary == self.exit_at:
            os._exit(70)

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One transaction; rolled back whole on any error, the commit's own included."""
        with self._locked() as db, transaction(db):
            yield db

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def quick_check(self) -> str | None:
        """None when ``PRAGMA quick_check`` says ok; else its first line."""
        with self._locked() as db:
            first = str(db.execute("PRAGMA quick_check").fetchone()[0])
        return None if first == "ok" else first

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

    def accept(
        self,
        message_id: str,
        command: str,
        arg: int | None,
        lang: str,
        admit: Callable[[], None] | None = None,
    ) -> int | None:
        """Store a command; None when its message id was seen before (nothing is done).
        ``admit`` is called after that check, inside the transaction: what it raises ends the
        transaction with nothing stored (the rate: a replay uses up none of it)."""
        with self._tx() as db:
            seen = db.execute("SELECT 1 FROM inbox WHERE message_id = ?", (message_id,))
            if seen.fetchone() is not None:  # checked first: a replay uses up no seq
                return None
            if admit is not None:
                admit()
            cur = db.execute(
                "INSERT INTO inbox(message_id, command, arg, lang, received_ts) "
                "VALUES (?, ?, ?, ?, ?)",
                (message_id, command, arg, lang, self.clock()),
            )
        self._passed("accept")
        return int(cur.lastrowid) if cur.lastrowid else None

    def cursor(self) -> int:
        with self._locked() as db:
            return int(db.execute("SELECT value FROM meta WHERE key='cursor'").fetchone()[0])

    def unanswered(self, limit: int = 100) -> list[Command]:
        """Commands past the cursor, oldest first."""
        with self._locked() as db:
            rows = db.execute(
                "SELECT seq, message_id, command, arg, lang, received_ts FROM inbox "
                "WHERE seq > (SELECT value FROM meta WHERE key='cursor') ORDER BY seq LIMIT ?",
                (limit,),
            ).fetchall()
        return [Command(*r) for r in rows]

    def answer(
        self,
        cmd: Command,
        reply: str | Callable[[int | None], str] | None,
        *,
        resend: int | None = None,
    ) -> bool:
        """Queue the reply (if any), mark the command answered, move the cursor: one step.
        With ``resend``, the copy of that delivery is queued in the same step and ``reply`` is
        called with its new id (None: no such delivery). False, and nothing done, while the
        outbox is full: the command waits past the cursor for room."""
        with self._tx() as db:
            if outbox.room(db) <= (resend is not None):
                return False
            new = None if resend is None else outbox.copy(db, self.clock, resend)
            text = reply(new) if callable(reply) else reply
            if text is not None:
                outbox.insert(db, self.clock, "reply", text)
            db.execute("UPDATE inbox SET answered_ts = ? WHERE seq = ?", (self.clock(), cmd.seq))
            db.execute("UPDATE meta SET value = ? WHERE key = 'cursor'", (cmd.seq,))
            db.execute(
                "DELETE FROM inbox WHERE seq <= ? AND (received_ts < ? OR seq <= ?)",
                (cmd.seq, self.clock() - INBOX_KEEP_S, cmd.seq - MAX_INBOX_ROWS),
            )
        self._passed("answer")
        return True

    # ---- notifications out ------------------------------------------------------------

    def queue(self, kind: str, text: str) -> int | None:
        """A new notification; its delivery id, or None when the outbox is full (counted)."""
        with self._tx() as db:
            if outbox.room(db) <= 0:
                outbox.dropped(db)
                return None
            return outbox.insert(db, self.clock, kind, text)

    def queue_alert(self, key: str, text: str) -> int | None:
        """An alert notification, unless ``key`` (fingerprint, status, start) was seen."""
        ids = self.queue_alerts([(key, text)]).ids
        return ids[0] if ids else None

    def queue_alerts(
        self, alerts: Sequence[tuple[str, str]], note: tuple[str, str, int] | None = None
    ) -> Queued:
        """Each ``(key, text)`` whose key was not seen, queued, in one transaction, then
        ``note`` (key, text, how many alerts Alertmanager left out) the same way, counted in
        ``meta``. A key dropped for a full outbox is not recorded, so the same body sent again
        is taken then."""
        items = [(key, text, 0) for key, text in alerts] + ([note] if note else [])
        with self._tx() as db:
            return dedupe.queue_alerts(db, self.clock, items)

    def queue_once(self, kind: str, items: Sequence[Once]) -> Queued:
        """Each item whose key is not in ``once`` queued (a ``text`` of None: recorded only)
        and its key recorded, in one transaction; an item dropped for a full outbox is not
        recorded (counted), so it is made again at the next chance."""
        with self._tx() as db:
            return dedupe.queue_once(db, self.clock, kind, items)

    def done_once(self, key: str) -> bool:
        """Whether a notification of ``key`` was made (``queue_once``)."""
        with self._locked() as db:
            return dedupe.done_once(db, key)

    def record_budgets(self, host: str, rows: Sequence[BudgetLevel]) -> None:
        """``host``'s budgets at soft or hard as last polled (those before are replaced)."""
        with self._tx() as db:
            db.execute("DELETE FROM budget_levels WHERE host = ?", (host,))
            now = self.clock()
            db.executemany(
                "INSERT INTO budget_levels VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(host, *r, now) for r in rows],
            )

    def resend(self, delivery_id: int, request_id: str | None = None) -> Resent | None:
        """A copy of a delivery, queued anew; None when no such delivery is kept. With
        ``request_id``, the request is recorded with its copy in the same transaction, and the
        same id again is answered with that copy (``already``), queueing nothing: whatever
        delivery it names (the caller compares ``resend_of``). ``OutboxFull`` (nothing
        recorded, the request may come again) while the outbox is full."""
        with self._tx() as db:
            if request_id is not None:
                done = outbox.resent(db, request_id)
                if done is not None:
                    return done
            if outbox.room(db) <= 0:
                raise OutboxFull()
            new = outbox.copy(db, self.clock, delivery_id)
            if new is None:
                return None
            if request_id is not None:
                outbox.record_resend(db, self.clock(), request_id, delivery_id, new)
        self._passed("resend")
        return Resent(new, delivery_id, "pending", already=False)

    def next_pending(self) -> Delivery | None:
        """The oldest pending delivery, now marked ``sending`` (committed before the send)."""
        with self._tx() as db:
            delivery = outbox.take_pending(db, self.clock)
            if delivery is None:
                return None
        self._passed("sending")
        return delivery

    def settle(
        self, delivery_id: int, state: str, reason: str | None, http_status: int | None
    ) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE outbox SET state = ?, reason = ?, http_status = ?, updated_ts = ? "
                "WHERE id = ? AND state = 'sending'",
                (state, reason, http_status, self.clock(), delivery_id),
            )
        self._passed("settle")

    def failures(self, limit: int = 5) -> list[Delivery]:
        """What the next status reply shows: deliveries that failed or ended unknown."""
        with self._locked() as db:
            return read_failures(db, limit)

    def summary(self) -> dict[str, int]:
        with self._locked() as db:
            return read_summary(db)

    def outbox(self) -> tuple[int, int]:
        """(pending deliveries, dropped ever)."""
        with self._locked() as db:
            dropped = db.execute("SELECT value FROM meta WHERE key = 'dropped_total'").fetchone()
            return outbox.pending(db), int(dropped[0])

    # ---- health -----------------------------------------------------------------------

    def health_states(self) -> dict[int, str]:
        with self._locked() as db:
            return dict(db.execute("SELECT port, state FROM health").fetchall())

    def record_health(self, port: int, state: str, text: str | None) -> int | None:
        """Store the reported state; queue ``text`` with it (one transaction). Never dropped
        for a full outbox: a pending notification of the same instance and state is replaced,
        so each instance has at most one pending per state, the newest last."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO health VALUES (?, ?, ?) ON CONFLICT(port) DO UPDATE "
                "SET state = excluded.state, since_ts = excluded.since_ts",
                (port, state, self.clock()),
            )
            if text is None:
                return None
            topic = f"health:{port}:{state}"
            db.execute("DELETE FROM outbox WHERE topic = ? AND state = 'pending'", (topic,))
            return outbox.insert(db, self.clock, "health", text, topic=topic)


__all__ = ["BOUNDARIES", "Command", "Store", "open_store"]
