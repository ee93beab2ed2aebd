"""The bench's ledgers (bench/ledgers.py): a generated root put back as its writers left it (an
empty -wal and its -shm beside a ledger were made by a reader), and its size."""

from __future__ import annotations

from pathlib import Path

from bench.ledgers import size_mb, summary_present, tidy


def test_a_reader_s_empty_wal_and_shm_are_removed_a_writer_s_kept(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "a.ledger.sqlite").write_bytes(b"x" * 1000)
    (run / "a.ledger.sqlite-wal").write_bytes(b"")
    (run / "a.ledger.sqlite-shm").write_bytes(b"s" * 10)
    (run / "b.ledger.sqlite").write_bytes(b"x" * 1000)
    (run / "b.ledger.sqlite-wal").write_bytes(b"w" * 10)
    assert tidy(tmp_path) == 2
    assert sorted(p.name for p in run.iterdir()) == [
        "a.ledger.sqlite",
        "b.ledger.sqlite",
        "b.ledger.sqlite-wal",
    ]
    assert tidy(tmp_path) == 0
    assert size_mb(tmp_path) == 2010 / 1e6
    assert not summary_present(tmp_path)
