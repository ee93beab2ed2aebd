"""The recorder's ledger file: claimed and described on first use, watched, left when damaged."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from vllm_ledger.format import paths, reads
from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.write.ledgerfile import LedgerFile, is_damage

NOW = 1_800_000_000.0
IDENT = WriterIdentity(
    "run-a", 2, 4, pid=7, instance=InstanceInfo(("tiny",), 8000, "testhost", "0.32.0")
)


def _file(root: Path) -> LedgerFile:
    return LedgerFile(root, IDENT, integrity_check_interval_s=60.0, first_check_mono=60.0)


def test_the_first_use_claims_generation_0_and_writes_who_writes_it(tmp_path: Path) -> None:
    f = _file(tmp_path)
    assert f.damage(0.0) is None  # nothing open: nothing to watch
    conn = f.connection(NOW)
    assert f.connection(NOW) is conn and f.generation == 0
    assert f.path == tmp_path / "run-a" / paths.ledger_name(2, 0)
    meta = reads.read_meta(conn)
    assert (meta["writer_rank"], meta["expected_writers"], meta["pid"]) == ("2", "4", "7")
    assert (meta["generation"], meta["created_ts"]) == ("0", repr(NOW))
    assert f.damage(0.0) is None
    f.close()
    assert f.conn is None and f.connection(NOW + 1) is not None and f.generation == 0


def test_a_file_left_as_damaged_is_followed_by_the_next_generation(tmp_path: Path) -> None:
    f = _file(tmp_path)
    first = f.connection(NOW)
    f.dim_ids[("k",)] = 1
    f.leave()
    assert f.conn is None and f.dim_ids == {}
    second = f.connection(NOW + 1)
    assert f.generation == 1 and second is not first
    assert reads.read_meta(second)["generation"] == "1"


def test_damage_is_a_database_error_that_says_so() -> None:
    assert is_damage(sqlite3.DatabaseError("database disk image is malformed"))
    assert is_damage(sqlite3.DatabaseError("file is not a database"))
    assert not is_damage(sqlite3.OperationalError("database is locked"))
    assert not is_damage(OSError("disk image is malformed"))
