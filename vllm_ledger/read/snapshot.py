"""Find every ledger under the roots, open each read-only, and pull out what a report needs.

Read-only throughout: ``mode=ro`` URIs (never ``immutable=1``), a busy timeout, and a status
for every file that cannot be read (``unreadable``, ``busy``, ``denied``, ``empty``) instead of
a crash or a zero. The same file reached twice (a symlink, a second root) is read once;
copies of one writer's file (same run, rank and generation) count once.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vllm_ledger.read.windows import Window
from vllm_ledger.write import paths, store
from vllm_ledger.write.identity import InstanceInfo

HOUR = 3600
SUM_COLUMNS = store.COUNT_COLUMNS[:6]  # token and request sums; faults come from problem_seconds
EMPTY_GRACE_S = 60.0  # a just-claimed file has no tables for a moment


@dataclass
class Sums:
    """Counts summed over some rows (a window, an engine, a file)."""

    prompt_tokens: int = 0
    generation_tokens: int = 0
    cached_tokens: int = 0
    requests: int = 0
    decode_tokens: int = 0
    decode_seconds_micro: int = 0

    def add(self, other: Sums) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.generation_tokens += other.generation_tokens
        self.cached_tokens += other.cached_tokens
        self.requests += other.requests
        self.decode_tokens += other.decode_tokens
        self.decode_seconds_micro += other.decode_seconds_micro

    def add_row(self, row: Sequence[int | None]) -> None:
        self.prompt_tokens += row[0] or 0
        self.generation_tokens += row[1] or 0
        self.cached_tokens += row[2] or 0
        self.requests += row[3] or 0
        self.decode_tokens += row[4] or 0
        self.decode_seconds_micro += row[5] or 0


@dataclass
class LedgerSnapshot:
    """What one ledger file says, read once."""

    path: Path
    status: str  # ok | unreadable | busy | denied | empty | starting
    detail: str = ""
    run_id: str = ""
    writer_rank: int = -1
    generation: int = 0
    expected_writers: int = 1
    instance: InstanceInfo = field(default_factory=InstanceInfo)
    created_ts: float | None = None
    clean_close_ts: float | None = None
    last_seq: int = 0
    spans: list[tuple[float, float]] = field(default_factory=list)
    # (second, dropped, rejected, lost)
    problem_seconds: list[tuple[int, int, int, int]] = field(default_factory=list)
    first_bucket_ts: int | None = None
    compacted_before_ts: int | None = None
    # window name -> engine -> sums
    sums: dict[str, dict[int, Sums]] = field(default_factory=dict)
    imprecise_windows: set[str] = field(default_factory=set)
    # From the sequence marker beside the file: commits the writer made that the file lacks.
    missing_commits: int = 0
    marker_ts: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def writer_key(self) -> tuple[str, int]:
        return (self.run_id, self.writer_rank)


def discover(roots: Iterable[Path]) -> list[Path]:
    """Every ledger file under the roots, each real file once."""
    return [p for _root, p, _st in discover_with_roots(roots)]


def discover_with_roots(roots: Iterable[Path]) -> list[tuple[Path, Path, os.stat_result]]:
    """(root, file, stat) for every ledger file under the roots, each real file once.

    The same file reached twice (a symlinked directory, a second root) has the same device
    and inode; one stat per file is much cheaper than resolving every path.
    """
    seen: set[tuple[int, int]] = set()
    out: list[tuple[Path, Path, os.stat_result]] = []
    for root in roots:
        for p in paths.iter_ledger_files(Path(root)):
            try:
                st = os.stat(p)
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen:
                continue
            seen.add(key)
            out.append((Path(root), p, st))
    return out


def _window_parts(start: int, cutoff: int) -> tuple[list[tuple[int, int]], tuple[int, int] | None]:
    """Split [start, cutoff) into per-second pieces at the edges and whole hours between."""
    if cutoff <= start:
        return [], None
    h0 = -(-start // HOUR) * HOUR
    h1 = cutoff // HOUR * HOUR
    if h0 >= h1:
        return [(start, cutoff)], None
    seconds = [(start, h0), (h1, cutoff)]
    return [p for p in seconds if p[1] > p[0]], (h0, h1)


def _classify(exc: BaseException) -> str:
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return "busy"
    if "unable to open" in text or "readonly" in text or "permission" in text:
        return "denied"
    return "unreadable"


def read_ledger(
    path: Path, windows: Sequence[Window], busy_timeout_s: float = 2.0, now_ts: float | None = None
) -> LedgerSnapshot:
    """Read one ledger file's facts and its sums for each window. Never raises."""
    snap = LedgerSnapshot(path=path, status="ok")
    named = paths.parse_ledger_name(path.name)
    if named is not None:  # known even when the file cannot be read
        snap.run_id = path.parent.name
        snap.writer_rank, snap.generation = named
    marker = store.read_sequence_marker(path)
    # Look before SQLite opens it: on a file shorter than its header SQLite would delete the
    # -wal beside it (and the committed data in it), even on a read-only connection.
    damage = store.file_damage(path, expect_wal=False)
    try:
        if damage is not None:
            snap.status = "empty" if damage == "truncated" and marker is None else "unreadable"
            snap.detail = damage
        else:
            with store.open_read_only(path, busy_timeout_s) as conn:
                _read_into(conn, snap, windows)
    except sqlite3.Error as exc:
        snap.status = _classify(exc)
        snap.detail = str(exc)
    except OSError as exc:
        snap.status = "denied"
        snap.detail = str(exc)
    except (ValueError, TypeError, KeyError) as exc:  # a meta value that is not what we wrote
        snap.status = "unreadable"
        snap.detail = f"bad ledger metadata: {exc}"
    if snap.ok and marker is not None and marker[0] > snap.last_seq:
        snap.missing_commits = marker[0] - snap.last_seq
        snap.marker_ts = marker[1]
    if snap.status == "empty" and marker is not None:
        # Commits were made (the marker says so) and the file holds none: data was lost.
        snap.status = "unreadable"
        snap.detail = f"{snap.detail}; {marker[0]} commit(s) made, none in the file"
    if snap.status == "empty" and now_ts is not None:
        try:
            if now_ts - path.stat().st_mtime < EMPTY_GRACE_S:
                snap.status = "starting"
        except OSError:
            pass
    return snap


def _read_into(conn: sqlite3.Connection, snap: LedgerSnapshot, windows: Sequence[Window]) -> None:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "meta" not in tables:
        snap.status = "empty"
        snap.detail = "no ledger tables"
        return
    meta = store.read_meta(conn)
    if "run_id" not in meta:
        snap.status = "empty"
        snap.detail = "no writer identity yet"
        return
    snap.run_id = meta["run_id"]
    snap.writer_rank = int(meta.get("writer_rank", "0"))
    snap.generation = int(meta.get("generation", "0"))
    snap.expected_writers = max(1, int(meta.get("expected_writers", "1")))
    snap.instance = InstanceInfo.from_meta(meta)
    snap.created_ts = float(meta["created_ts"]) if "created_ts" in meta else None
    snap.clean_close_ts = float(meta["clean_close_ts"]) if "clean_close_ts" in meta else None
    snap.last_seq = int(meta.get("last_seq", "0"))
    if "compacted_before_ts" in meta:
        snap.compacted_before_ts = int(meta["compacted_before_ts"])
    snap.spans = [
        (float(s), float(e))
        for s, e in conn.execute("SELECT start_ts, end_ts FROM spans ORDER BY start_ts")
    ]
    if "problem_seconds" in tables:
        snap.problem_seconds = [
            tuple(r)
            for r in conn.execute(
                "SELECT ts, dropped_events, rejected_events, lost_events FROM problem_seconds"
            )
        ]
    first = conn.execute("SELECT min(ts) FROM buckets").fetchone()[0]
    if "first_second_ts" in meta:  # written by compaction before it dropped any second
        kept = int(meta["first_second_ts"])
        first = kept if first is None else min(first, kept)
    elif snap.compacted_before_ts is not None:
        # Seconds before the compaction horizon survive only as hours.
        first_h = conn.execute("SELECT min(ts) FROM hourly").fetchone()[0]
        if (
            first_h is not None
            and first_h < snap.compacted_before_ts
            and (first is None or first_h < first)
        ):
            first = first_h
    snap.first_bucket_ts = first
    cols = ", ".join(f"sum({c})" for c in SUM_COLUMNS)
    q_sec = f"SELECT engine, {cols} FROM buckets WHERE ts >= ? AND ts < ? GROUP BY engine"
    q_hour = f"SELECT engine, {cols} FROM hourly WHERE ts >= ? AND ts < ? GROUP BY engine"
    for w in windows:
        per_engine: dict[int, Sums] = {}
        second_parts, hour_part = _window_parts(w.start_ts, w.cutoff_ts)
        queries = [(q_sec, a, b) for a, b in second_parts]
        if hour_part is not None:
            queries.append((q_hour, *hour_part))
        for q, a, b in queries:
            for row in conn.execute(q, (a, b)):
                per_engine.setdefault(row[0], Sums()).add_row(row[1:])
        snap.sums[w.name] = per_engine
        # An edge second that compaction folded into an hour cannot be answered exactly.
        cb = snap.compacted_before_ts
        first = snap.first_bucket_ts
        if (
            cb is not None
            and first is not None
            and any(a < cb and b > first for a, b in second_parts)
        ):
            snap.imprecise_windows.add(w.name)


def read_all(
    roots: Iterable[Path],
    windows: Sequence[Window],
    busy_timeout_s: float = 2.0,
    now_ts: float | None = None,
) -> list[LedgerSnapshot]:
    """Read every ledger under the roots, de-duplicated by run, writer and generation."""
    from vllm_ledger.read import summary  # the index of finished files (derived data)

    by_key: dict[tuple[str, int, int], LedgerSnapshot] = {}
    others: list[LedgerSnapshot] = []
    indexes: dict[Path, dict[str, summary.Entry]] = {}
    for root, path, st in discover_with_roots(roots):
        if root not in indexes:
            indexes[root] = summary.load(root)
        snap = None
        if indexes[root]:
            snap = summary.snapshot_from(root, path, indexes[root], windows, st)
        if snap is None:
            snap = read_ledger(path, windows, busy_timeout_s, now_ts)
        if not snap.ok:
            if snap.status != "starting":
                others.append(snap)
            continue
        key = (snap.run_id, snap.writer_rank, snap.generation)
        prev = by_key.get(key)
        if prev is None or snap.last_seq > prev.last_seq:
            by_key[key] = snap
    return [*by_key.values(), *others]
