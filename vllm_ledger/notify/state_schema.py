"""The notifier state file's tables and their migrations: the named schema steps, applied in
order, all that a file lacks in the one transaction that opens it.

``meta`` (the command cursor and the counters), ``inbox`` (commands in), ``outbox``
(notifications out, with ``topic`` since 0002), ``seen`` and ``once`` (keys handled once),
``health``, ``resends``, ``budget_levels``; ``migrations`` lists the steps applied.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

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


def migrate(db: sqlite3.Connection, clock: Callable[[], float]) -> None:
    """Apply the steps ``db`` lacks, in the caller's transaction: the steps already applied are
    read there too, so a file gains all of them or none."""
    db.execute("CREATE TABLE IF NOT EXISTS migrations(name TEXT PRIMARY KEY, applied_ts REAL)")
    done = {r[0] for r in db.execute("SELECT name FROM migrations")}
    for name, sql in MIGRATIONS:
        if name not in done:
            for stmt in sql.split(";"):
                if stmt.strip():
                    db.execute(stmt)
            db.execute("INSERT INTO migrations VALUES (?, ?)", (name, clock()))


__all__ = ["MIGRATIONS", "migrate"]
