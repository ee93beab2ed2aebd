"""A derived index of finished ledger files, so a report over years of restarts stays cheap.

A root that has seen a restart a day for three years holds thousands of ledger files, and
opening each one costs about a millisecond. Files whose writer has finished never change
again, so what a report needs of them (identity, spans, fault seconds and their total sums
per engine) is kept in one JSON file at the root, ``.vllm-ledger-summary.json``, written
atomically (temporary file, then rename).

It is derived data: rebuilt from the ledgers at any time (``vllm-ledger compact``), never the
only copy. The reader uses an entry only when the file's size and modification time still
match and every window asked for either misses the file's time entirely or holds all of it;
otherwise it opens the file. A missing or damaged summary just means files are opened.

Standard library only: the maintenance pass may run inside vLLM. Imports only the
snapshot module of the read side (no circle: the LedgerSet imports this, not the reverse).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_ledger.read import values, writer_state
from vllm_ledger.read.discovery import Found, discover
from vllm_ledger.read.snapshot import LedgerSnapshot, Sums, read_ledger
from vllm_ledger.read.windows import Window
from vllm_ledger.write import store
from vllm_ledger.write.identity import InstanceInfo

SUMMARY_NAME = ".vllm-ledger-summary.json"
SUMMARY_VERSION = 1
SUMMARY_MAX_BYTES = 512 << 20  # about 700 000 files; a larger one is ignored (files are opened)
EVERYTHING = Window("total", 0, 2**62)


@dataclass(frozen=True)
class Entry:
    size: int
    mtime_ns: int
    first_ts: float
    last_ts: float
    snapshot: dict[str, Any]


def _encode(snap: LedgerSnapshot, totals: dict[int, Sums]) -> dict[str, Any]:
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


def _decode(path: Path, d: dict[str, Any], entry: Entry) -> LedgerSnapshot:
    last_end = d.get("last_end_ts", entry.last_ts)  # older entries: the file's last instant
    return LedgerSnapshot(
        path=path,
        status="ok",
        run_id=str(d["run_id"]),
        writer_rank=int(d["writer_rank"]),
        generation=int(d["generation"]),
        expected_writers=int(d["expected_writers"]),
        instance=InstanceInfo.from_meta(d["instance"]),
        created_ts=d["created_ts"],
        clean_close_ts=d["clean_close_ts"],
        last_seq=int(d["last_seq"]),
        spans=values.check_spans(d["spans"]),
        problem_seconds=values.check_problem_seconds(d["problem_seconds"]),
        first_bucket_ts=d["first_bucket_ts"],
        last_end_ts=None if last_end is None else float(last_end),
        compacted_before_ts=d["compacted_before_ts"],
        has_daily=bool(d.get("has_daily", False)),
        missing_commits=int(d["missing_commits"]),
        marker_ts=d["marker_ts"],
        _totals={
            values.check_count("engine", int(e), values.MAX_ENGINE): Sums(
                *(values.check_count("total", x, 2**62) for x in v)
            )
            for e, v in d["totals"].items()
        },
    )


def load(root: Path) -> dict[str, Entry]:
    """The summary's entries by path relative to the root; empty when absent or unreadable."""
    try:
        doc = json.loads(store.read_regular_file(root / SUMMARY_NAME, SUMMARY_MAX_BYTES))
        if doc.get("version") != SUMMARY_VERSION:
            return {}
        return {
            rel: Entry(e["size"], e["mtime_ns"], e["first_ts"], e["last_ts"], e["snapshot"])
            for rel, e in doc["entries"].items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _matching(found: Found, entries: dict[str, Entry]) -> Entry | None:
    entry = entries.get(found.rel)
    if entry is None:
        return None
    if found.stat.st_size != entry.size or found.stat.st_mtime_ns != entry.mtime_ns:
        return None
    if _wal_stamp(found.name) != entry.snapshot.get("wal"):
        return None  # commits landed in the -wal since the entry was made
    return entry


def snapshot_from(found: Found, entries: dict[str, Entry]) -> LedgerSnapshot | None:
    """The file's facts and whole-file totals from the summary, without opening the file, or
    None when the entry is missing, stale or malformed (the file must then be opened).

    A window that holds all of the file's counts, or none, is answered from the totals; any
    other window opens the file (``LedgerSnapshot.window_sums``).
    """
    if not entries:
        return None
    entry = _matching(found, entries)
    if entry is None:
        return None
    try:
        return _decode(found.path, entry.snapshot, entry)
    except (KeyError, TypeError, ValueError):
        return None  # a malformed entry (wrong types or values): read the file itself


def _wal_stamp(path: Path | str) -> list[int] | None:
    """Size and mtime of the file's -wal, or None when there is none."""
    try:
        st = os.stat(f"{path}-wal")
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


Prepare = Callable[[LedgerSnapshot], LedgerSnapshot]


def refresh(root: Path, now_ts: float, prepare: Prepare | None = None) -> tuple[int, int]:
    """Rewrite the root's summary with every finished file; returns (entries, files read).

    Each file is opened at most once (none whose entry still matches). ``prepare`` sees every
    readable file's snapshot first and may change the file (the maintenance pass compacts it)
    and return a fresh snapshot of it.
    """
    old = load(root)
    entries: dict[str, dict[str, Any]] = {}
    read = 0
    for found in discover([root]):
        snap = snapshot_from(found, old)
        if snap is None:
            snap = read_ledger(found.path, [EVERYTHING], now_ts=now_ts)
            read += 1
        if not snap.ok:
            continue
        if prepare is not None:
            snap = prepare(snap)
        entry = _entry(snap, now_ts)
        if entry is not None:
            entries[found.rel] = entry
    _write(root, entries)
    return len(entries), read


def _entry(snap: LedgerSnapshot, now_ts: float) -> dict[str, Any] | None:
    if not snap.ok or not writer_state.finished(
        clean_close_ts=snap.clean_close_ts, last_proof_ts=snap.last_proof_ts, at_ts=now_ts
    ):
        return None
    try:
        st = os.stat(snap.path)
    except OSError:
        return None
    firsts = [s for s, _ in snap.spans]
    lasts = [e for _, e in snap.spans]
    if snap.first_bucket_ts is not None:
        firsts.append(snap.first_bucket_ts)
    firsts += [p[0] for p in snap.problem_seconds]
    lasts += [p[0] + 1 for p in snap.problem_seconds]
    if snap.last_end_ts is not None:
        lasts.append(snap.last_end_ts)
    if not firsts:
        return None
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "first_ts": math.floor(min(firsts)),
        "last_ts": math.ceil(max(lasts)),
        "snapshot": {**_encode(snap, snap.window_sums(EVERYTHING)), "wal": _wal_stamp(snap.path)},
    }


def _write(root: Path, entries: dict[str, dict[str, Any]]) -> None:
    doc = {"version": SUMMARY_VERSION, "entries": entries}
    import tempfile  # only the maintenance pass writes the summary

    fd, tmp = tempfile.mkstemp(prefix=".summary-", dir=root)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, separators=(",", ":"))
        os.chmod(tmp, 0o644)
        os.replace(tmp, root / SUMMARY_NAME)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
