"""Opening one ledger file for a ``LedgerSnapshot``.

``open_snapshot`` looks at the file from outside SQLite first (a regular file of at least a
header's length: SQLite would delete the ``-wal`` beside a shorter one, even read-only), then
opens it once, read-only, in one read transaction, so its facts (identity, spans, fault
seconds) and every window sum later asked of it come from the same commit. A file that cannot
be read gets a status (``unreadable``, ``busy``, ``denied``, ``empty``, ``starting``) instead
of a crash or a zero. The SQL is in ``format/reads.py``; this module turns what it returns into
a ``LedgerSnapshot``.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Sequence
from datetime import tzinfo
from pathlib import Path

from vllm_ledger.bounds import instant_ok
from vllm_ledger.errors import NotARegularFile
from vllm_ledger.format import connect, paths, reads, smallfiles
from vllm_ledger.format.identity import InstanceInfo
from vllm_ledger.read import values
from vllm_ledger.read.snapshot import FileStatus, LedgerSnapshot
from vllm_ledger.read.windows import Window
from vllm_ledger.units import format_instant

# A writer creates its file and commits its first heartbeat in the same step (write/schedule.py:
# the first heartbeat is due at once), so a file with nothing committed this long after its
# last change is a writer that never could: a full disk, no permission, or a process that died
# before its first commit.
EMPTY_GRACE_S = 10.0


def classify_error(exc: BaseException) -> FileStatus:
    """The status of a file whose read failed with ``exc``."""
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return "busy"
    if "unable to open" in text or "readonly" in text or "permission" in text:
        return "denied"
    return "unreadable"


def open_snapshot(
    path: Path,
    *,
    now_ts: float | None = None,
    busy_timeout_s: float = 2.0,
    st: os.stat_result | None = None,
) -> tuple[LedgerSnapshot, sqlite3.Connection | None]:
    """Read one file's facts; returns the snapshot and its open connection (None when the
    file could not be read). The caller owns the connection and closes it. Never raises."""
    snap = LedgerSnapshot(path=path, status="ok")
    named = paths.parse_ledger_name(path.name)
    if named is not None:  # known even when the file cannot be read
        snap.run_id = path.parent.name
        snap.writer_rank, snap.generation = named
    conn: sqlite3.Connection | None = None
    marker: tuple[int, float] | None = None
    try:
        marker = smallfiles.read_sequence_marker(path)
        if st is None:
            st = os.stat(path)
        damage = _damage_from_stat(st)
        if damage is None:
            conn, head, snap._stamp = connect.connect_read_only(path, busy_timeout_s)
            damage = connect.header_damage(head)
        if damage is not None:
            never = damage == "truncated" and marker is None
            snap.status = "never_committed" if never else "unreadable"
            snap.detail = damage
        else:
            assert conn is not None
            _read_facts(reads.read_facts(conn), snap)
    except sqlite3.Error as exc:
        snap.status = classify_error(exc)
        snap.detail = str(exc)
    except NotARegularFile as exc:  # its .seq marker: it could hide lost commits
        snap.status = "unreadable"
        snap.detail = f"{Path(exc.filename or '').name} is not a regular file"
    except OSError as exc:
        snap.status = "denied"
        snap.detail = str(exc)
    except (ValueError, TypeError, KeyError) as exc:  # a value that is not what we wrote
        snap.status = "bad_values"
        snap.detail = str(exc) if isinstance(exc, values.BadValues) else f"bad metadata: {exc}"
    if snap.ok and marker is not None and marker[0] > snap.last_seq:
        snap.missing_commits = marker[0] - snap.last_seq
        snap.marker_ts = marker[1]
    if snap.status == "never_committed" and marker is not None:
        # Commits were made (the marker says so) and the file holds none: data was lost.
        snap.status = "unreadable"
        snap.detail = f"{snap.detail}; {marker[0]} commit(s) made, none in the file"
    if snap.status == "never_committed" and st is not None:
        _never_committed(snap, st.st_mtime, now_ts)
    if not snap.ok and conn is not None:
        conn.close()
        conn = None
    return snap, conn


def reopen(path: Path, busy_timeout_s: float = 2.0) -> sqlite3.Connection:
    """Open a file whose facts are known (from the summary) for its sums, with the same checks
    as ``open_snapshot``; raises ``sqlite3.DatabaseError`` or ``OSError`` when it cannot."""
    damage = _damage_from_stat(os.stat(path))
    if damage is not None:
        raise sqlite3.DatabaseError(damage)
    conn, head, stamp = connect.connect_read_only(path, busy_timeout_s)
    damage = connect.header_damage(head)
    if damage is not None or not connect.unchanged(path, stamp):
        conn.close()
        raise sqlite3.DatabaseError(damage or "database is busy: it changed since it was read")
    return conn


def _damage_from_stat(st: os.stat_result) -> str | None:
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_size < connect.HEADER_BYTES:
        return "truncated"
    return None


def _never_committed(snap: LedgerSnapshot, mtime: float, now_ts: float | None) -> None:
    """A file its writer created and never committed to: ``starting`` for ``EMPTY_GRACE_S``
    after its last change, then ``never_committed``, with that change as its creation (SQLite
    leaves a file it could not commit to as it was)."""
    if instant_ok(mtime):
        snap.created_ts = mtime
    if now_ts is not None and now_ts - mtime < EMPTY_GRACE_S:
        snap.status = "starting"


def describe_never_committed(snap: LedgerSnapshot, tz: tzinfo) -> str:
    """What a file its writer never committed to means, since when, and the likely causes."""
    when = snap.created_ts
    since = "at an unknown time" if when is None else f"at {format_instant(when, tz)}"
    return (
        f"run {snap.run_id} writer {snap.writer_rank} gen {snap.generation}: created "
        f"{since}, nothing committed since ({snap.detail}): the writer could not write (a full "
        "disk, no write permission) or its process died before its first commit; its tokens "
        "since then are unknown (docs/faults.md#a-writer-that-never-committed)"
    )


def _read_facts(facts: reads.Facts, snap: LedgerSnapshot) -> None:
    if "meta" not in facts.tables:
        snap.status = "never_committed"
        snap.detail = "no ledger tables"
        return
    meta = facts.meta
    if "run_id" not in meta:
        snap.status = "never_committed"
        snap.detail = "no writer identity"
        return
    snap.run_id = meta["run_id"]
    snap.writer_rank = values.check_count(
        "writer rank", int(meta.get("writer_rank", "0")), values.MAX_WRITER_RANK
    )
    snap.generation = values.check_count(
        "generation", int(meta.get("generation", "0")), values.MAX_GENERATION
    )
    snap.expected_writers = (
        values.check_count(
            "expected writers", int(meta.get("expected_writers", "1")), values.MAX_EXPECTED_WRITERS
        )
        or 1
    )
    snap.instance = InstanceInfo.from_meta(meta)
    if "created_ts" in meta:
        snap.created_ts = values.check_instant("created_ts", float(meta["created_ts"]))
    if "clean_close_ts" in meta:
        snap.clean_close_ts = values.check_instant("clean_close_ts", float(meta["clean_close_ts"]))
    snap.last_seq = values.check_count("last_seq", int(meta.get("last_seq", "0")), values.MAX_COUNT)
    if "compacted_before_ts" in meta:
        snap.compacted_before_ts = int(
            values.check_instant("compacted_before_ts", int(meta["compacted_before_ts"]))
        )
    snap.spans = values.check_spans(facts.spans)
    snap.problem_seconds = values.check_problem_seconds(facts.problem_seconds)
    for name, ts in (
        ("first second", facts.first_second_ts),
        ("first hour", facts.first_hour_ts),
        ("last counted second", facts.last_end_ts),
    ):
        if ts is not None:
            values.check_instant(name, ts)
    first = facts.first_second_ts
    if "first_second_ts" in meta:  # written by compaction before it dropped any second
        kept = int(values.check_instant("first_second_ts", int(meta["first_second_ts"])))
        first = kept if first is None else min(first, kept)
    elif snap.compacted_before_ts is not None:
        # Seconds before the compaction horizon survive only as hours.
        first_h = facts.first_hour_ts
        if (
            first_h is not None
            and first_h < snap.compacted_before_ts
            and (first is None or first_h < first)
        ):
            first = first_h
    snap.first_bucket_ts = first
    snap.last_end_ts = facts.last_end_ts
    snap.has_daily = "daily" in facts.tables


def read_ledger(
    path: Path,
    windows: Sequence[Window] = (),
    *,
    now_ts: float | None = None,
    busy_timeout_s: float = 2.0,
) -> LedgerSnapshot:
    """One file's facts and its sums for ``windows``, the file closed before it returns.

    For a look at one file (``check``, maintenance, tests); a report reads through
    ``LedgerSet``, which keeps the file open for whatever windows its views ask.
    """
    snap, conn = open_snapshot(path, now_ts=now_ts, busy_timeout_s=busy_timeout_s)
    if conn is not None:
        try:
            snap._connect = lambda: conn
            for w in windows:
                snap.window_sums(w)
        except sqlite3.Error as exc:
            snap.status, snap.detail = classify_error(exc), str(exc)
        except values.BadValues as exc:
            snap.status, snap.detail = "bad_values", str(exc)
        finally:
            snap._connect = None
            conn.close()
    return snap
