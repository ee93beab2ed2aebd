"""One finished file as the summary holds it: encoded, decoded through the reader's checks,
and taken only while the file is unchanged."""

from __future__ import annotations

import os
from pathlib import Path

from tests.ledgers import ev, write_ledger
from vllm_ledger.read.discovery import Found, discover
from vllm_ledger.read.open_ledger import read_ledger
from vllm_ledger.read.summary_entry import Entry, encode, found_wal, snapshot_from, wal_stamp
from vllm_ledger.read.windows import Window

T0 = 1_796_000_000.0
EVERYTHING = Window("total", 0, 2**62)


def _entry(tmp_path: Path) -> tuple[Entry, Found]:
    write_ledger(tmp_path, "run-a", start_ts=T0, end_ts=T0 + 60, events=[ev(T0 + 5, prompt=4)])
    (found,) = discover([tmp_path])
    snap = read_ledger(found.path, [EVERYTHING], now_ts=T0 + 7200)
    st = os.stat(found.path)
    entry = Entry(
        st.st_size, st.st_mtime_ns, found_wal(found), encode(snap, snap.window_sums(EVERYTHING))
    )
    return entry, found


def test_an_unchanged_file_is_taken_from_its_entry_as_read(tmp_path: Path) -> None:
    entry, found = _entry(tmp_path)
    snap = snapshot_from(found, {found.file_name: entry})
    want = read_ledger(found.path, [EVERYTHING], now_ts=T0 + 7200)
    assert snap is not None
    assert (snap.run_id, snap.spans, snap.last_seq) == (want.run_id, want.spans, want.last_seq)
    assert snap.window_sums(EVERYTHING) == want.window_sums(EVERYTHING)


def test_a_changed_file_or_a_bad_value_means_the_file_is_read(tmp_path: Path) -> None:
    entry, found = _entry(tmp_path)
    name = found.file_name
    grown = Entry(entry.size + 1, entry.mtime_ns, entry.wal, entry.facts)
    assert snapshot_from(found, {name: grown}) is None
    bad = Entry(entry.size, entry.mtime_ns, entry.wal, {**entry.facts, "writer_rank": -1})
    assert snapshot_from(found, {name: bad}) is None
    assert snapshot_from(found, {}) is None


def test_a_wal_stamp_is_its_size_and_mtime_or_none(tmp_path: Path) -> None:
    db = tmp_path / "x.sqlite"
    assert wal_stamp(db) is None
    (tmp_path / "x.sqlite-wal").write_bytes(b"1234")
    st = os.stat(tmp_path / "x.sqlite-wal")
    assert wal_stamp(db) == [4, st.st_mtime_ns]
