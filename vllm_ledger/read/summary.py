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

Standard library only: the maintenance pass may run inside vLLM.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_ledger.read.snapshot import LedgerSnapshot, Sums, read_ledger
from vllm_ledger.read.windows import Window
from vllm_ledger.write import paths
from vllm_ledger.write.identity import InstanceInfo

SUMMARY_NAME = ".vllm-ledger-summary.json"
SUMMARY_VERSION = 1
FINISHED_AFTER_S = 3600.0  # a writer silent this long without a clean close is finished too
_SUM_FIELDS = (
    "prompt_tokens",
    "generation_tokens",
    "cached_tokens",
    "requests",
    "decode_tokens",
    "decode_seconds_micro",
)


@dataclass(frozen=True)
class Entry:
    size: int
    mtime_ns: int
    first_ts: float
    last_ts: float
    snapshot: dict[str, Any]


def _encode(snap: LedgerSnapshot, total: dict[int, Sums]) -> dict[str, Any]:
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
        "compacted_before_ts": snap.compacted_before_ts,
        "missing_commits": snap.missing_commits,
        "marker_ts": snap.marker_ts,
        "totals": {str(e): [getattr(s, f) for f in _SUM_FIELDS] for e, s in total.items()},
    }


def _decode(
    path: Path, d: dict[str, Any], windows: Iterable[Window], entry: Entry
) -> LedgerSnapshot:
    totals = {int(e): Sums(*v) for e, v in d["totals"].items()}
    snap = LedgerSnapshot(
        path=path,
        status="ok",
        run_id=d["run_id"],
        writer_rank=d["writer_rank"],
        generation=d["generation"],
        expected_writers=d["expected_writers"],
        instance=InstanceInfo.from_meta(d["instance"]),
        created_ts=d["created_ts"],
        clean_close_ts=d["clean_close_ts"],
        last_seq=d["last_seq"],
        spans=[(float(a), float(b)) for a, b in d["spans"]],
        problem_seconds=[tuple(p) for p in d["problem_seconds"]],
        first_bucket_ts=d["first_bucket_ts"],
        compacted_before_ts=d["compacted_before_ts"],
        missing_commits=d["missing_commits"],
        marker_ts=d["marker_ts"],
    )
    for w in windows:
        inside = entry.first_ts >= w.start_ts and entry.last_ts <= w.cutoff_ts
        snap.sums[w.name] = (
            {e: Sums(*(getattr(s, f) for f in _SUM_FIELDS)) for e, s in totals.items()}
            if inside
            else {}
        )
    return snap


def answers(entry: Entry, windows: Iterable[Window]) -> bool:
    """True when every window misses the file's time entirely or holds all of it."""
    for w in windows:
        before = entry.last_ts <= w.start_ts
        inside = entry.first_ts >= w.start_ts and entry.last_ts <= w.cutoff_ts
        if not (before or inside):
            return False
    return True


def load(root: Path) -> dict[str, Entry]:
    """The summary's entries by path relative to the root; empty when absent or unreadable."""
    try:
        doc = json.loads((root / SUMMARY_NAME).read_text())
        if doc.get("version") != SUMMARY_VERSION:
            return {}
        return {
            rel: Entry(e["size"], e["mtime_ns"], e["first_ts"], e["last_ts"], e["snapshot"])
            for rel, e in doc["entries"].items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def snapshot_from(
    root: Path,
    path: Path,
    entries: dict[str, Entry],
    windows: Iterable[Window],
    st: os.stat_result | None = None,
) -> LedgerSnapshot | None:
    """The file's snapshot from the summary, or None when the file must be opened."""
    try:
        rel = path.relative_to(root).as_posix()
        entry = entries.get(rel)
        if entry is None:
            return None
        if st is None:
            st = os.stat(path)
    except (OSError, ValueError):
        return None
    windows = list(windows)
    if st.st_size != entry.size or st.st_mtime_ns != entry.mtime_ns or not answers(entry, windows):
        return None
    if _wal_stamp(path) != entry.snapshot.get("wal"):
        return None  # commits landed in the -wal since the entry was made
    try:
        return _decode(path, entry.snapshot, windows, entry)
    except (KeyError, TypeError, ValueError):
        return None  # a malformed entry: read the file itself


def _wal_stamp(path: Path) -> list[int] | None:
    """Size and mtime of the file's -wal, or None when there is none."""
    try:
        st = os.stat(f"{path}-wal")
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _finished(snap: LedgerSnapshot, now_ts: float) -> bool:
    last = max((e for _, e in snap.spans), default=-math.inf)
    return snap.clean_close_ts is not None or now_ts - last > FINISHED_AFTER_S


def refresh(root: Path, now_ts: float) -> tuple[int, int]:
    """Add finished files to the root's summary; returns (entries, files read)."""
    old = load(root)
    entries: dict[str, dict[str, Any]] = {}
    read = 0
    everything = [Window("total", 0, 2**62)]
    for path in paths.iter_ledger_files(root):
        try:
            rel = path.relative_to(root).as_posix()
            st = os.stat(path)
        except (OSError, ValueError):
            continue
        prev = old.get(rel)
        if (
            prev is not None
            and prev.size == st.st_size
            and prev.mtime_ns == st.st_mtime_ns
            and prev.snapshot.get("wal") == _wal_stamp(path)
        ):
            entries[rel] = {
                "size": prev.size,
                "mtime_ns": prev.mtime_ns,
                "first_ts": prev.first_ts,
                "last_ts": prev.last_ts,
                "snapshot": prev.snapshot,
            }
            continue
        snap = read_ledger(path, everything, now_ts=now_ts)
        read += 1
        if not snap.ok or not _finished(snap, now_ts):
            continue
        firsts = [s for s, _ in snap.spans]
        lasts = [e for _, e in snap.spans]
        if snap.first_bucket_ts is not None:
            firsts.append(snap.first_bucket_ts)
        firsts += [p[0] for p in snap.problem_seconds]
        lasts += [p[0] + 1 for p in snap.problem_seconds]
        last_bucket = _last_bucket_end(path)
        if last_bucket is not None:
            lasts.append(last_bucket)
        if not firsts:
            continue
        entries[rel] = {
            "size": st.st_size,
            "mtime_ns": st.st_mtime_ns,
            "first_ts": math.floor(min(firsts)),
            "last_ts": math.ceil(max(lasts)),
            "snapshot": {**_encode(snap, snap.sums["total"]), "wal": _wal_stamp(path)},
        }
    _write(root, entries)
    return len(entries), read


def _last_bucket_end(path: Path) -> float | None:
    from vllm_ledger.write import store

    try:
        with store.open_read_only(path) as conn:
            s = conn.execute("SELECT max(ts) FROM buckets").fetchone()[0]
            h = conn.execute("SELECT max(ts) FROM hourly").fetchone()[0]
    except Exception:
        return None
    ends = [v + 1 for v in (s,) if v is not None] + [v + 3600 for v in (h,) if v is not None]
    return float(max(ends)) if ends else None


def _write(root: Path, entries: dict[str, dict[str, Any]]) -> None:
    doc = {"version": SUMMARY_VERSION, "entries": entries}
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
