"""The recorder's ledger file: claimed, opened and described on first use, watched for damage
done from outside, and left byte-for-byte as it is when SQLite calls it damaged (the next use
claims a new file of the next generation for the same writer).

Standard library only: this runs inside vLLM.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from pathlib import Path

from vllm_ledger.format import connect, paths, smallfiles, writes
from vllm_ledger.format.identity import WriterIdentity

logger = logging.getLogger("vllm.ledger.recorder")

_DAMAGE_MARKERS = ("malformed", "not a database", "file is encrypted", "disk image")


def is_damage(exc: BaseException) -> bool:
    """Whether SQLite's error says the file itself is damaged."""
    text = str(exc).lower()
    return isinstance(exc, sqlite3.DatabaseError) and any(m in text for m in _DAMAGE_MARKERS)


class LedgerFile:
    """One writer's current ledger file and its open connection, if any."""

    def __init__(
        self,
        root: Path,
        identity: WriterIdentity,
        *,
        integrity_check_interval_s: float,
        first_check_mono: float,
    ) -> None:
        self.root = root
        self.identity = identity
        self.conn: sqlite3.Connection | None = None
        self.path: Path | None = None
        self.generation = -1
        self.need_new_file = True
        self.need_meta = True
        self.dim_ids: dict[tuple[str, ...], int] = {}  # attr_dims ids in the open file
        self.marker = smallfiles.MarkerWriter()  # its .seq beside it, kept open
        self.integrity_check_interval_s = integrity_check_interval_s
        self.next_integrity_check = first_check_mono

    def connection(self, now_ts: float) -> sqlite3.Connection:
        """The open connection; else the file opened (a new one claimed first where needed)."""
        if self.conn is not None:
            return self.conn
        ident = self.identity
        run_dir = paths.run_dir(self.root, ident.run_id)
        run_dir.mkdir(parents=True, exist_ok=True)
        if self.need_new_file or self.path is None:
            # A fresh file: never append to a file another process (or a damaged one) has.
            self.generation, self.path = paths.claim_new_ledger(run_dir, ident.writer_rank)
            self.need_new_file = False
        conn = connect.open_for_write(self.path, now_ts)
        if self.need_meta:
            self._describe(conn, run_dir, now_ts)
        self.conn = conn
        return conn

    def _describe(self, conn: sqlite3.Connection, run_dir: Path, now_ts: float) -> None:
        """Write the new file's meta (who writes it, since when); on failure close ``conn``."""
        ident = self.identity
        meta = {
            "run_id": ident.run_id,
            "writer_rank": str(ident.writer_rank),
            "expected_writers": str(ident.expected_writers),
            "engine_indexes": ",".join(map(str, ident.engine_indexes)),
            "pid": str(ident.pid or os.getpid()),
            "generation": str(self.generation),
            "created_ts": repr(now_ts),
            **ident.instance.to_meta(),
        }
        try:
            writes.write_meta(conn, meta)
        except BaseException:
            conn.close()
            raise
        self.need_meta = False
        connect.fsync_dir(run_dir)
        logger.info(
            "vllm-ledger: writing %s (run %s, writer %d of %d)",
            self.path,
            ident.run_id,
            ident.writer_rank,
            ident.expected_writers,
        )

    def damage(self, now_mono: float) -> str | None:
        """What damage done from outside the open file shows, if any: its header and WAL at
        every call, SQLite's quick_check once per integrity check interval."""
        if self.conn is None or self.path is None:
            return None
        problem = connect.file_damage(self.path, expect_wal=True)
        if problem is None and now_mono >= self.next_integrity_check:
            self.next_integrity_check = now_mono + self.integrity_check_interval_s
            result = connect.quick_check(self.path)
            if result != "ok" and "locked" not in result:
                problem = f"quick_check: {result}"
        return problem

    def leave(self) -> None:
        """Leave a damaged file as it is (no checkpoint): the next use claims a new one."""
        if self.conn is not None:
            connect.close_without_checkpoint(self.conn)
            self.conn = None
        self.marker.close()
        self.dim_ids = {}
        self.need_new_file = True
        self.need_meta = True

    def close(self) -> None:
        """Close the connection; the next use opens the same file again."""
        if self.conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self.conn.close()
        self.conn = None
        self.marker.close()
