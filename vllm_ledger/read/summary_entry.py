"""One finished file as the summary of finished files holds it (``summary.py``): its facts
and whole-file sums encoded, decoded through the checks the reader applies to the file's own,
and taken as a snapshot while the file (and its ``-wal``) is still the one the entry was made
of. Standard library only: the maintenance pass writes these."""

from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_ledger.format.identity import InstanceInfo
from vllm_ledger.read import values
from vllm_ledger.read.discovery import Found
from vllm_ledger.read.snapshot import LedgerSnapshot, Sums, SumsByEngine


@dataclass(frozen=True)
class Entry:
    """One finished file as the summary holds it."""

    size: int
    mtime_ns: int
    wal: Any  # the -wal's [size, mtime_ns] when the entry was made, or None
    facts: Any  # as ``encode`` wrote them; checked when decoded


def snapshot_from(found: Found, entries: dict[str, Entry]) -> LedgerSnapshot | None:
    """The file's facts and whole-file totals from its summary entry
    (``summary.Index.entries``), without opening the file, or None when the entry is missing,
    stale or fails the reader's checks (the file must then be opened).

    A window that holds all of the file's counts, or none, is answered from the totals; any
    other window opens the file (``LedgerSnapshot.window_sums``).
    """
    entry = entries.get(found.file_name)
    if entry is None:
        return None
    st = found.stat
    if st.st_size != entry.size or st.st_mtime_ns != entry.mtime_ns:
        return None
    if found_wal(found) != entry.wal:
        return None  # commits landed in the -wal since the entry was made
    try:
        return _decode(found.path, entry.facts)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None  # a malformed entry (wrong types or values): read the file itself


def encode(snap: LedgerSnapshot, totals: SumsByEngine) -> dict[str, Any]:
    """A finished file's facts and whole-file sums as its summary entry holds them."""
    return {
        "run_id": snap.run_id,
        "writer_rank": snap.writer_rank,
        "generation": snap.generation,
        "expected_writers": snap.expected_writers,
        "instance": snap.instance.to_meta(),
        "created_ts": snap.created_ts,
        "clean_close_ts": snap.clean_close_ts,
        "last_seq": snap.last_seq,
        "spans": snap.spans,
        "problem_seconds": snap.problem_seconds,
        "first_bucket_ts": snap.first_bucket_ts,
        "last_end_ts": snap.last_end_ts,
        "compacted_before_ts": snap.compacted_before_ts,
        "has_daily": snap.has_daily,
        "missing_commits": snap.missing_commits,
        "marker_ts": snap.marker_ts,
        "totals": {str(e): s.as_list() for e, s in totals.items()},
    }


def _decode(path: Path, d: Any) -> LedgerSnapshot:
    """``encode``'s facts, each through the check the reader applies to the file's own."""
    spans = values.check_spans(_list(d["spans"]))
    if any(b[0] < a[0] for a, b in itertools.pairwise(spans)):
        raise values.BadValues("spans out of order")  # the reader gets them by start
    return LedgerSnapshot(
        path=path,
        status="ok",
        run_id=values.check_text("run id", d["run_id"]),
        writer_rank=values.check_count("writer rank", d["writer_rank"], values.MAX_WRITER_RANK),
        generation=values.check_count("generation", d["generation"], values.MAX_GENERATION),
        expected_writers=_expected_writers(d["expected_writers"]),
        instance=InstanceInfo.from_meta(values.check_meta("instance", d["instance"])),
        created_ts=values.check_optional_instant("created_ts", d["created_ts"]),
        clean_close_ts=values.check_optional_instant("clean_close_ts", d["clean_close_ts"]),
        last_seq=values.check_count("last_seq", d["last_seq"], values.MAX_COUNT),
        spans=spans,
        problem_seconds=values.check_problem_seconds(_list(d["problem_seconds"])),
        first_bucket_ts=values.check_optional_second("first counted second", d["first_bucket_ts"]),
        last_end_ts=values.check_optional_instant("last counted second", d["last_end_ts"]),
        compacted_before_ts=values.check_optional_second(
            "compacted_before_ts", d["compacted_before_ts"]
        ),
        has_daily=values.check_bool("has_daily", d["has_daily"]),
        missing_commits=values.check_count(
            "missing commits", d["missing_commits"], values.MAX_COUNT
        ),
        marker_ts=_marker_ts(d["marker_ts"]),
        _totals={e: Sums.from_list(v) for e, v in values.check_totals(d["totals"]).items()},
    )


def _expected_writers(value: Any) -> int:
    """1 to ``MAX_EXPECTED_WRITERS``: what a snapshot holds (the reader reads a 0 as 1)."""
    if values.check_count("expected writers", value, values.MAX_EXPECTED_WRITERS) == 0:
        raise values.BadValues("expected writers 0: a snapshot holds at least 1")
    return int(value)


def _list(rows: Any) -> list[Any]:
    if type(rows) is not list:
        raise values.BadValues(f"{rows!r:.40} is not a list")
    return rows


def _marker_ts(value: Any) -> float | None:
    """The sequence marker's time: any finite number (the reader takes it as written)."""
    if value is None:
        return None
    if type(value) not in (int, float) or not math.isfinite(value):
        raise values.BadValues(f"marker time {value!r:.40} is not a number")
    return float(value)


def found_wal(found: Found) -> list[int] | None:
    """``wal_stamp`` of a found file; no look of its own where its directory had no -wal."""
    return wal_stamp(found.name) if found.wal else None


def wal_stamp(path: Path | str) -> list[int] | None:
    """Size and mtime of the file's -wal, or None when there is none."""
    try:
        st = os.stat(f"{path}-wal")
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]
