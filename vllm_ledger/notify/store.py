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
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

from vllm_ledger.errors import LedgerError

DeliveryState = Literal["pending", "sending", "sent", "failed", "unknown"]
Fault = Literal["locked", "read_only", "disk_full", "damaged", "io"]
Boundary = Literal["accept", "answer", "sending", "settle", "resend"]
BOUNDARIES: tuple[Boundary, ...] = ("accept", "answer", "sending", "settle", "resend")
BUSY_TIMEOUT_MS = 2000  # how long a write waits for another process's lock
LOCK_WAIT_S = 5.0  # how long a caller waits for another thread's transaction
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
    (
        "0002_outbox_topic",
        """
        ALTER TABLE outbox ADD COLUMN topic TEXT;
        CREATE INDEX outbox_topic ON outbox(topic, state);
        """,
    ),
    (
        "0003_resends_and_not_shown",
        """
        CREATE TABLE resends(
            request_id TEXT PRIMARY KEY,
            delivery_id INTEGER NOT NULL,
            copy_id INTEGER NOT NULL,
            requested_ts REAL NOT NULL);
        INSERT INTO meta(key, value) VALUES ('not_shown_notes_total', 0),
            ('not_shown_alerts_total', 0);
        """,
    ),
    (
        "0004_once_and_budget_levels",
        """
        CREATE TABLE once(
            key TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            delivery_id INTEGER,
            created_ts REAL NOT NULL,
            keep_until_ts REAL NOT NULL);
        CREATE TABLE budget_levels(
            host TEXT NOT NULL,
            name TEXT NOT NULL,
            place TEXT NOT NULL,
            who TEXT NOT NULL,
            figure TEXT NOT NULL,
            level TEXT NOT NULL,
            used REAL NOT NULL,
            limit_value REAL NOT NULL,
            fraction REAL NOT NULL,
            end_ts INTEGER NOT NULL,
            projected REAL,
            updated_ts REAL NOT NULL,
            PRIMARY KEY (host, name));
        """,
    ),
)


class StoreUnavailable(LedgerError):
    """The state file refused a transaction (``.reason``: locked, read_only, disk_full,
    damaged, io); nothing of it was written."""

    def __init__(self, reason: Fault, detail: str) -> None:
        super().__init__(f"the notifier's state file is {reason.replace('_', ' ')}: {detail}")
        self.reason: Fault = reason


class StateFileError(LedgerError):
    """The state file cannot be used at start (``.path``): damaged, read-only, not a file."""

    def __init__(self, path: Path, what: str) -> None:
        super().__init__(
            f"the notifier's state file {path} {what}",
            hint=f"move it aside (mv {path} {path}.bad) and start again: the notifier starts "
            "fresh, losing the command cursor and the message ids seen in the last day "
            '(docs/notifier.md, "A damaged state file")',
        )
        self.path = path


def fault_of(exc: sqlite3.Error) -> Fault:
    """What kind of fault a SQLite error is."""
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return "locked"
    if "readonly" in text or "read-only" in text:
        return "read_only"
    if "full" in text:
        return "disk_full"
    if "malformed" in text or "not a database" in text or "corrupt" in text:
        return "damaged"
    return "io"


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


def check_state_file(path: Path) -> None:
    """Refuse, before SQLite opens it, a state file that is a FIFO, socket, device or folder,
    or one without write permission (even for root: a file made read-only on purpose)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StateFileError(path, f"cannot be read ({exc.strerror})") from exc
    if not stat.S_ISREG(st.st_mode):
        raise StateFileError(path, "is not a regular file")
    if st.st_mode & 0o222 == 0 or not os.access(path, os.R_OK | os.W_OK):
        raise StateFileError(path, "is read-only")


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
        self, path: Path, *, clock: Callable[[], float], exit_at: str | None = None
    ) -> None:
        self.path = path
        self.clock = clock
        self.exit_at = exit_at
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            self._migrate()
        except BaseException:
            self._db.close()
            raise

    def _migrate(self) -> None:
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
        with self._locked() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    with suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                raise

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
            if _pending(db) + (resend is not None) >= MAX_PENDING:
                return False
            new = None
            if resend is not None:
                row = db.execute("SELECT kind, text FROM outbox WHERE id = ?", (resend,))
                found = row.fetchone()
                if found is not None:
                    new = self._queue(db, found[0], found[1], resend_of=resend)
            text = reply(new) if callable(reply) else reply
            if text is not None:
                self._queue(db, "reply", text)
            db.execute("UPDATE inbox SET answered_ts = ? WHERE seq = ?", (self.clock(), cmd.seq))
            db.execute("UPDATE meta SET value = ? WHERE key = 'cursor'", (cmd.seq,))
            db.execute(
                "DELETE FROM inbox WHERE seq <= ? AND (received_ts < ? OR seq <= ?)",
                (cmd.seq, self.clock() - INBOX_KEEP_S, cmd.seq - MAX_INBOX_ROWS),
            )
        self._passed("answer")
        return True

    # ---- notifications out ------------------------------------------------------------

    def _queue(
        self,
        db: sqlite3.Connection,
        kind: str,
        text: str,
        resend_of: int | None = None,
        topic: str | None = None,
    ) -> int:
        """Insert one pending notification (the caller checked the bound); its id."""
        now = self.clock()
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

    def _dropped(self, db: sqlite3.Connection, n: int = 1) -> None:
        _add(db, "dropped_total", n)

    def queue(self, kind: str, text: str) -> int | None:
        """A new notification; its delivery id, or None when the outbox is full (counted)."""
        with self._tx() as db:
            if _pending(db) >= MAX_PENDING:
                self._dropped(db)
                return None
            return self._queue(db, kind, text)

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
            now = self.clock()
            db.execute("DELETE FROM seen WHERE seen_ts < ?", (now - ALERTS_KEEP_S,))
            room = MAX_PENDING - _pending(db)
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
                queued.append(self._queue(db, "alert", text))
                room -= 1
                if not_shown:
                    note_id = queued[-1]
                    _add(db, "not_shown_notes_total", 1)
                    _add(db, "not_shown_alerts_total", not_shown)
            if dropped:
                self._dropped(db, dropped)
        return Queued(queued, dropped, note_id)

    def queue_once(self, kind: str, items: Sequence[Once]) -> Queued:
        """Each item whose key is not in ``once`` queued (a ``text`` of None: recorded only)
        and its key recorded, in one transaction; an item dropped for a full outbox is not
        recorded (counted), so it is made again at the next chance."""
        with self._tx() as db:
            now = self.clock()
            db.execute("DELETE FROM once WHERE keep_until_ts < ?", (now,))
            room = MAX_PENDING - _pending(db)
            queued: list[int] = []
            dropped = 0
            for item in items:
                if db.execute("SELECT 1 FROM once WHERE key = ?", (item.key,)).fetchone():
                    continue
                new = None
                if item.text is not None:
                    if room <= 0:
                        dropped += 1
                        continue
                    new = self._queue(db, kind, item.text)
                    queued.append(new)
                    room -= 1
                db.execute(
                    "INSERT INTO once VALUES (?, ?, ?, ?, ?)",
                    (item.key, kind, new, now, item.keep_until_ts),
                )
            if dropped:
                self._dropped(db, dropped)
        return Queued(queued, dropped)

    def done_once(self, key: str) -> bool:
        """Whether a notification of ``key`` was made (``queue_once``)."""
        with self._locked() as db:
            return db.execute("SELECT 1 FROM once WHERE key = ?", (key,)).fetchone() is not None

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
                done = _resent(db, request_id)
                if done is not None:
                    return done
            if _pending(db) >= MAX_PENDING:
                raise OutboxFull()
            row = db.execute(
                "SELECT kind, text FROM outbox WHERE id = ?", (delivery_id,)
            ).fetchone()
            if row is None:
                return None
            new = self._queue(db, row[0], row[1], resend_of=delivery_id)
            if request_id is not None:
                db.execute(  # requests for deliveries no longer kept are forgotten
                    "DELETE FROM resends WHERE delivery_id < (SELECT min(id) FROM outbox)"
                )
                db.execute(
                    "INSERT INTO resends VALUES (?, ?, ?, ?)",
                    (request_id, delivery_id, new, self.clock()),
                )
        self._passed("resend")
        return Resent(new, delivery_id, "pending", already=False)

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
        self._passed("sending")
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
            return _pending(db), int(dropped[0])

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
            return self._queue(db, "health", text, topic=topic)


class Once(NamedTuple):
    """A notification made once: its key, its text (None: the key is recorded only) and how
    long the key is kept (Unix seconds)."""

    key: str
    text: str | None
    keep_until_ts: float


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


class OutboxFull(LedgerError):
    """The outbox holds ``MAX_PENDING`` deliveries: nothing was queued or recorded."""


class Queued(NamedTuple):
    """What ``queue_alerts`` did: the new delivery ids (in order), how many were dropped for a
    full outbox, and the note's delivery id when the note was queued."""

    ids: list[int]
    dropped: int
    note_id: int | None = None


@dataclass(frozen=True)
class Resent:
    """What a resend request queued: the copy's delivery id, the delivery it copies, the copy's
    state now (``gone`` once pruned), and whether an earlier try of the request queued it."""

    copy_id: int
    resend_of: int
    state: str
    already: bool


def _pending(db: sqlite3.Connection) -> int:
    return int(db.execute("SELECT count(*) FROM outbox WHERE state = 'pending'").fetchone()[0])


def _add(db: sqlite3.Connection, key: str, n: int) -> None:
    db.execute("UPDATE meta SET value = value + ? WHERE key = ?", (n, key))


def _resent(db: sqlite3.Connection, request_id: str) -> Resent | None:
    """The copy an earlier try of ``request_id`` queued, with its state now; None if none."""
    row = db.execute(
        "SELECT r.copy_id, r.delivery_id, o.state FROM resends r "
        "LEFT JOIN outbox o ON o.id = r.copy_id WHERE r.request_id = ?",
        (request_id,),
    ).fetchone()
    if row is None:
        return None
    return Resent(int(row[0]), int(row[1]), str(row[2] or "gone"), already=True)


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
        f"SELECT {_DELIVERY_COLS} FROM outbox ORDER BY id DESC LIMIT ?", (limit,)
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


@contextmanager
def open_read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """The state file ``mode=ro`` (for ``notifier status``, while the notifier runs)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        yield db
    finally:
        db.close()


__all__ = [
    "BOUNDARIES",
    "DELIVERY_STATES",
    "MAX_OUTBOX_ROWS",
    "MAX_PENDING",
    "BudgetLevel",
    "Command",
    "Delivery",
    "DeliveryState",
    "Once",
    "OutboxFull",
    "Queued",
    "Resent",
    "StateFileError",
    "Store",
    "StoreUnavailable",
    "check_state_file",
    "open_read_only",
    "open_store",
    "read_budget_levels",
    "read_digests",
    "read_failures",
    "read_health",
    "read_recent",
    "read_summary",
    "state_path",
]
