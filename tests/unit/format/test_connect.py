"""``format/connect.py``: a ledger opened for write (WAL, migrated once), read-only (immutable
only where no ``-wal`` stands beside it), its header looked at from outside SQLite, and
``quick_check``; all on real files in ``tmp_path``."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from vllm_ledger.format.connect import (
    HEADER_BYTES,
    SQLITE_MAGIC,
    close_without_checkpoint,
    connect_read_only,
    file_damage,
    header_damage,
    open_for_write,
    open_read_only,
    quick_check,
    read_only_uri,
    unchanged,
)
from vllm_ledger.format.schema import MIGRATIONS
from vllm_ledger.format.writes import write_meta

NOW = 1_764_400_000.0


def finished_ledger(path: Path) -> Path:
    """A ledger written and closed: no ``-wal`` beside it."""
    conn = open_for_write(path, NOW)
    write_meta(conn, {"run_id": "r1"})
    conn.close()
    assert not os.path.exists(f"{path}-wal")
    return path


def test_open_for_write_is_wal_normal_incremental_and_migrated(tmp_path: Path) -> None:
    path = tmp_path / "w0.g0.ledger.sqlite"
    conn = open_for_write(path, NOW)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
        assert conn.execute("PRAGMA auto_vacuum").fetchone() == (2,)  # INCREMENTAL
        assert conn.isolation_level is None  # autocommit: transactions are explicit
        assert conn.execute("SELECT count(*), min(applied_ts) FROM migrations").fetchone() == (
            len(MIGRATIONS),
            NOW,
        )
        assert os.path.exists(f"{path}-wal")
    finally:
        conn.close()
    again = open_for_write(path, NOW + 60)
    try:
        assert again.execute("SELECT count(*), max(applied_ts) FROM migrations").fetchone() == (
            len(MIGRATIONS),
            NOW,
        )
    finally:
        again.close()


def test_read_only_uri_escapes_what_sqlite_reads_in_a_uri_path(tmp_path: Path) -> None:
    path = tmp_path / "a%b?c#d e.sqlite"
    base = str(tmp_path.resolve())
    assert read_only_uri(path) == f"file:{base}/a%25b%3fc%23d e.sqlite?mode=ro"
    assert read_only_uri(path, immutable=True) == (
        f"file:{base}/a%25b%3fc%23d e.sqlite?mode=ro&immutable=1"
    )
    finished_ledger(path)
    with sqlite3.connect(read_only_uri(path, immutable=True), uri=True) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'run_id'").fetchone() == ("r1",)
    conn.close()


def test_a_finished_file_is_read_immutable_with_one_stamp_and_no_new_files(
    tmp_path: Path,
) -> None:
    path = finished_ledger(tmp_path / "w0.g0.ledger.sqlite")
    before = sorted(os.listdir(tmp_path))
    st = os.stat(path)
    conn, head, stamp = connect_read_only(path)
    try:
        assert stamp == (st.st_size, st.st_mtime_ns)
        assert len(head) == HEADER_BYTES and head.startswith(SQLITE_MAGIC)
        assert head == path.read_bytes()[:HEADER_BYTES]
        assert conn.in_transaction  # one read transaction for every query
        assert conn.execute("SELECT value FROM meta WHERE key = 'run_id'").fetchone() == ("r1",)
        assert unchanged(path, stamp)
    finally:
        conn.close()
    assert sorted(os.listdir(tmp_path)) == before  # no -wal, no -shm


def test_a_file_with_a_wal_is_read_through_it_and_has_no_stamp(tmp_path: Path) -> None:
    path = tmp_path / "w0.g0.ledger.sqlite"
    writer = open_for_write(path, NOW)
    try:
        writer.execute("PRAGMA wal_autocheckpoint=0")  # the commit stays in the -wal
        write_meta(writer, {"run_id": "live"})
        conn, head, stamp = connect_read_only(path)
        try:
            assert stamp is None
            assert head.startswith(SQLITE_MAGIC)
            got = conn.execute("SELECT value FROM meta WHERE key = 'run_id'").fetchone()
            assert got == ("live",)
            assert unchanged(path, stamp)  # always, for a normal read-only open
        finally:
            conn.close()
    finally:
        writer.close()


def test_unchanged_is_false_once_the_file_or_its_wal_changes(tmp_path: Path) -> None:
    path = finished_ledger(tmp_path / "w0.g0.ledger.sqlite")
    st = os.stat(path)
    stamp = (st.st_size, st.st_mtime_ns)
    assert unchanged(path, stamp)
    wal = Path(f"{path}-wal")
    wal.write_bytes(b"")
    assert not unchanged(path, stamp)  # a writer has it open
    wal.unlink()
    assert unchanged(path, stamp)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert not unchanged(path, stamp)
    assert not unchanged(tmp_path / "gone.sqlite", stamp)
    assert unchanged(tmp_path / "gone.sqlite", None)


def test_open_read_only_refuses_writes_and_closes(tmp_path: Path) -> None:
    path = finished_ledger(tmp_path / "w0.g0.ledger.sqlite")
    with open_read_only(path) as conn:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("INSERT INTO meta VALUES ('x', 'y')")
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        conn.execute("SELECT 1")


def test_header_damage() -> None:
    good = SQLITE_MAGIC + bytes(HEADER_BYTES - len(SQLITE_MAGIC))
    assert header_damage(good) is None
    assert header_damage(b"") == "truncated"
    assert header_damage(good[:99]) == "truncated"
    assert header_damage(b"SQLite format 2\x00" + good[16:]) == "bad header"
    assert header_damage(b"x" * 4096) == "bad header"


def test_file_damage_and_quick_check_on_a_good_file(tmp_path: Path) -> None:
    path = finished_ledger(tmp_path / "w0.g0.ledger.sqlite")
    assert file_damage(path, expect_wal=False) is None
    assert file_damage(path, expect_wal=True) == "WAL file missing"
    Path(f"{path}-wal").write_bytes(b"")
    assert file_damage(path, expect_wal=True) is None
    Path(f"{path}-wal").unlink()
    assert quick_check(path) == "ok"


def test_a_truncated_file_is_named_and_its_wal_left_alone(tmp_path: Path) -> None:
    path = finished_ledger(tmp_path / "w0.g0.ledger.sqlite")
    data = path.read_bytes()
    path.write_bytes(data[:50])
    wal = Path(f"{path}-wal")
    wal.write_bytes(b"frames")  # SQLite would delete it if it opened the short file
    assert file_damage(path, expect_wal=True) == "truncated"
    assert quick_check(path) == "truncated"
    assert wal.read_bytes() == b"frames"
    path.write_bytes(b"")
    assert quick_check(path) == "truncated"


def test_a_bad_header_is_named_before_sqlite_opens_the_file(tmp_path: Path) -> None:
    path = finished_ledger(tmp_path / "w0.g0.ledger.sqlite")
    data = bytearray(path.read_bytes())
    data[0:6] = b"NOTSQL"
    path.write_bytes(bytes(data))
    assert file_damage(path, expect_wal=False) == "bad header"
    assert quick_check(path) == "bad header"


def test_a_missing_file_cannot_be_read(tmp_path: Path) -> None:
    missing = tmp_path / "w0.g0.ledger.sqlite"
    assert file_damage(missing, expect_wal=False) == "cannot read: No such file or directory"
    assert quick_check(missing) == "cannot read: No such file or directory"


def test_damaged_pages_behind_a_good_header_fail_quick_check(tmp_path: Path) -> None:
    path = finished_ledger(tmp_path / "w0.g0.ledger.sqlite")
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page : page * 2] = b"\xff" * page  # the second page: the pointer map
    path.write_bytes(bytes(data))
    assert file_damage(path, expect_wal=False) is None
    assert quick_check(path).startswith("*** in database main ***\nFailed to read ptrmap key=")


def test_close_without_checkpoint_leaves_the_main_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "w0.g0.ledger.sqlite"
    conn = open_for_write(path, NOW)
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    main_before = path.read_bytes()
    write_meta(conn, {"run_id": "kept in the wal"})
    wal_before = Path(f"{path}-wal").read_bytes()
    assert wal_before
    close_without_checkpoint(conn)
    assert path.read_bytes() == main_before
    assert Path(f"{path}-wal").read_bytes() == wal_before
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        conn.execute("SELECT 1")
