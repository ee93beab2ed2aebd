"""A derived index of finished ledger files, so a report over years of restarts stays cheap.

A root that has seen a restart a day for three years holds thousands of ledger files, and
opening each one costs about a millisecond. Files whose writer has finished never change
again, so what a report needs of them is kept in one file at the root,
``.vllm-ledger-summary.json``, written atomically (temporary file, then rename):

- per finished file, its facts (identity, spans, fault seconds) and whole-file sums per
  engine, used while the file's size, modification time and ``-wal`` still match;
- per run whose every writer closed cleanly, a record of the run as a whole
  (``summary_run.SummaryRun``): its coverage and its counts added up. A report takes such a
  run from the record when its directory holds exactly the files the record names, each
  unchanged, without decoding or merging the files one by one.

The layout is JSON Lines. The first line is the index: ``{"version": 2, "instances": [...],
"runs": {<run directory>: {"files": [[name, size, mtime_ns, wal], ...], "at": [start, end],
"run": [...]}}}`` (``wal``: the ``-wal``'s ``[size, mtime_ns]``, or null; ``run``, only for a
run answered whole, is its record: ``summary_run.RECORD_FIELDS``, its instance a place in
``instances``). Each further line holds one run directory's per-file facts, ``{<file name>:
{...}}``, at bytes ``[start, end)`` after the index's newline, read and decoded only when a
file of that run must be taken one by one.

It is derived data: rebuilt from the ledgers at any time (``vllm-ledger compact``), never the
only copy. Every value read from it passes the ledger reader's checks (``values.py``); a
missing, older, stale or damaged summary, one larger than ``SUMMARY_MAX_BYTES`` or a line nested
deeper than ``MAX_NESTING`` (checked before the parser, which recurses, runs), or any entry or
record in it that fails them, just means the files it names are opened and read, and the next
maintenance pass writes it anew.

Standard library only: the maintenance pass writes it. Imports only the one-file and one-run
parts of the read path (no circle: the LedgerSet imports this, not the reverse).
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from vllm_ledger import infile, strictjson
from vllm_ledger.format.identity import InstanceInfo
from vllm_ledger.format.smallfiles import write_whole
from vllm_ledger.read import values, writer_state
from vllm_ledger.read.discovery import Found, discover_runs
from vllm_ledger.read.open_ledger import read_ledger
from vllm_ledger.read.snapshot import LedgerSnapshot, SumsByEngine
from vllm_ledger.read.summary_entry import Entry, encode, found_wal, snapshot_from, wal_stamp
from vllm_ledger.read.summary_run import SummaryRun, from_record, instance_from, summarise
from vllm_ledger.read.windows import Window

SUMMARY_NAME = ".vllm-ledger-summary.json"
SUMMARY_VERSION = 2
SUMMARY_MAX_BYTES = 512 << 20  # about 700 000 files; a larger one is ignored (files are opened)
EVERYTHING = Window("total", 0, 2**62)
# The summary is written 6 deep at most (a run's record, its vouched stretches, one of them);
# a line nested deeper is damage, refused before ``json.loads`` recurses into it.
MAX_NESTING = strictjson.MAX_DEPTH


class Index:
    """A root's summary as read: the index line, and each run's file facts on demand (read
    only then, and only while the file is still the one the index came from)."""

    def __init__(
        self,
        runs: dict[str, Any] | None = None,
        instances: list[Any] | None = None,
        path: Path | None = None,
        st: os.stat_result | None = None,
        details_at: int = 0,
    ) -> None:
        self._runs = runs or {}
        self._instance_facts = instances or []
        self._instances: list[InstanceInfo] | None = None
        self._path = path
        self._stat = st
        self._details_at = details_at
        self._entries: dict[str, dict[str, Entry]] = {}

    def __bool__(self) -> bool:
        return bool(self._runs)

    def run_names(self) -> list[str]:
        return list(self._runs)

    def entries(self, run_name: str) -> dict[str, Entry]:
        """The run directory's file entries by file name; empty when there are none or its
        line is damaged."""
        got = self._entries.get(run_name)
        if got is None:
            got = {}
            with contextlib.suppress(OSError, KeyError, TypeError, ValueError, AttributeError):
                got = self._decode_entries(self._runs.get(run_name))
            self._entries[run_name] = got
        return got

    def _decode_entries(self, rec: Any) -> dict[str, Entry]:
        if rec is None or self._path is None or self._stat is None:
            return {}
        start, end = rec["at"]
        values.check_count("line end", end, self._stat.st_size - self._details_at)
        values.check_count("line start", start, end)
        line = _read_range(self._path, self._stat, self._details_at + start, end - start)
        facts = _decoded(line)
        if type(facts) is not dict:
            return {}
        return {
            name: Entry(size, mtime_ns, wal, facts.get(name))
            for name, size, mtime_ns, wal in rec["files"]
        }

    def summary_run(self, files: list[Found]) -> SummaryRun | None:
        """The run in ``files`` (one run directory's, in discovery's order) answered whole, or
        None when its record is missing, names other files, any file changed, or a value in
        it fails the reader's checks."""
        rec = self._runs.get(files[0].run_name)
        try:
            if rec is None or "run" not in rec or len(rec["files"]) != len(files):
                return None
            for found, (name, size, mtime_ns, wal) in zip(files, rec["files"], strict=True):
                st = found.stat
                if found.file_name != name or st.st_size != size or st.st_mtime_ns != mtime_ns:
                    return None
                if (found.wal or wal is not None) and found_wal(found) != wal:
                    return None  # commits landed in the -wal since the record was made
            return from_record(rec["run"], self.instances(), files)
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def instances(self) -> list[InstanceInfo]:
        """The instance facts records point into, each checked once (none when any fails)."""
        if self._instances is None:
            self._instances = []
            with contextlib.suppress(KeyError, TypeError, ValueError, AttributeError):
                self._instances = [instance_from(m) for m in self._instance_facts]
        return self._instances


def read_index(root: Path) -> Index:
    """The root's summary; empty when absent, unreadable or of another version."""
    path = root / SUMMARY_NAME
    try:
        line, st = _read_index_line(path)
        doc = _decoded(line)
        if type(doc) is not dict or doc.get("version") != SUMMARY_VERSION:
            return Index()
        runs, instances = doc["runs"], doc["instances"]
        if type(runs) is not dict or type(instances) is not list:
            return Index()
        return Index(runs, instances, path, st, len(line) + 1)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return Index()


def _decoded(line: bytes) -> Any:
    """A line of the summary as JSON; ``ValueError`` (as for any damage) when it nests deeper
    than ``MAX_NESTING``, found without recursing (``strictjson.within_depth``)."""
    if not strictjson.within_depth(line, MAX_NESTING):
        raise ValueError(f"a summary line nested deeper than {MAX_NESTING}")
    return json.loads(line)


def _read_index_line(path: Path) -> tuple[bytes, os.stat_result]:
    """The summary's first line and the file's stat, read as ``infile.read_regular_file`` reads
    a file (refused unless regular, never blocking), and no further than that line: the rest
    is read only if a run's files must be taken one by one."""
    with infile.open_regular(path, SUMMARY_MAX_BYTES) as (fd, st):
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, 1 << 18)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if b"\n" in chunk:
                break
            if size > SUMMARY_MAX_BYTES:  # grown since its stat
                raise OSError(errno.EFBIG, "the summary grew past its limit", str(path))
        data = b"".join(chunks)
        newline = data.find(b"\n")
        return (data if newline < 0 else data[:newline]), st


def _read_range(path: Path, st: os.stat_result, offset: int, size: int) -> bytes:
    """``size`` bytes at ``offset`` of the summary, only while it is still the file whose stat
    is ``st`` (``OSError`` when it was replaced or cut short since)."""
    with infile.open_regular(path, SUMMARY_MAX_BYTES) as (fd, now):
        same = (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) == (
            st.st_dev,
            st.st_ino,
            st.st_size,
            st.st_mtime_ns,
        )
        data = os.pread(fd, size, offset) if same else b""
        if len(data) != size:
            raise OSError(errno.ESTALE, "the summary changed since it was read", str(path))
        return data


def load(root: Path) -> dict[str, Entry]:
    """Every file entry of the root's summary by ``<run dir>/<file name>``."""
    index = read_index(root)
    return {
        f"{run}/{name}": entry
        for run in index.run_names()
        for name, entry in index.entries(run).items()
    }


Prepare = Callable[[LedgerSnapshot], LedgerSnapshot]


def refresh(root: Path, now_ts: float, prepare: Prepare | None = None) -> tuple[int, int]:
    """Rewrite the root's summary with every finished file; returns (file entries, files read).

    Each file is opened at most once (none whose entry still matches). ``prepare`` sees every
    readable file's snapshot first and may change the file (the maintenance pass compacts it)
    and return a fresh snapshot of it. A run directory whose files are all in the summary
    also gets a record of the run as a whole, where one can answer for it.
    """
    old = read_index(root)
    runs: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    instances: list[Any] = []
    entries = read = 0
    for files in discover_runs([root]):
        run_name = files[0].run_name
        known = old.entries(run_name)
        stamps: list[list[Any]] = []
        facts: dict[str, Any] = {}
        snaps: list[LedgerSnapshot] = []
        totals: list[SumsByEngine] = []
        for found in files:
            snap = snapshot_from(found, known)
            if snap is None:
                snap = read_ledger(found.path, [EVERYTHING], now_ts=now_ts)
                read += 1
            if not snap.ok:
                continue
            if prepare is not None:
                snap = prepare(snap)
            made = _file_entry(snap, now_ts)
            if made is None:
                continue
            stamp, whole = made
            stamps.append([found.file_name, *stamp])
            facts[found.file_name] = encode(snap, whole)
            snaps.append(snap)
            totals.append(whole)
        if not stamps:
            continue
        rec: dict[str, Any] = {"files": stamps}
        if len(snaps) == len(files):
            run = summarise(snaps, totals, instances)
            if run is not None:
                rec["run"] = run
        runs.append((run_name, rec, facts))
        entries += len(stamps)
    _write(root, runs, instances)
    return entries, read


def _file_entry(snap: LedgerSnapshot, now_ts: float) -> tuple[list[Any], SumsByEngine] | None:
    """(size, mtime_ns, -wal stamp) and whole-file sums of a finished file, or None when it
    is not finished or holds nothing to place in time."""
    if not snap.ok or not writer_state.finished(
        clean_close_ts=snap.clean_close_ts, last_proof_ts=snap.last_proof_ts, at_ts=now_ts
    ):
        return None
    if not (snap.spans or snap.first_bucket_ts is not None or snap.problem_seconds):
        return None
    if snap.marker_ts is not None and not math.isfinite(snap.marker_ts):
        return None  # not representable in strict JSON: the file is read each time instead
    try:
        st = os.stat(snap.path)
    except OSError:
        return None
    # Taken from the summary (a file unchanged since), or summed when the file was read.
    whole = snap._totals if snap._totals is not None else snap.window_sums(EVERYTHING)
    return [st.st_size, st.st_mtime_ns, wal_stamp(snap.path)], whole


def _write(
    root: Path, runs: Sequence[tuple[str, dict[str, Any], dict[str, Any]]], instances: list[Any]
) -> None:
    index: dict[str, Any] = {}
    lines: list[bytes] = []
    at = 0
    for run_name, rec, facts in runs:
        try:
            line = json.dumps(facts, separators=(",", ":"), allow_nan=False).encode()
            if "run" in rec:
                json.dumps(rec["run"], allow_nan=False)  # never write a record NaN would break
        except ValueError:
            continue  # a value strict JSON cannot hold: these files are read each time
        index[run_name] = {**rec, "at": [at, at + len(line)]}
        lines.append(line)
        at += len(line) + 1
    head = json.dumps(
        {"version": SUMMARY_VERSION, "instances": instances, "runs": index}, separators=(",", ":")
    )
    data = b"\n".join([head.encode(), *lines]) + b"\n"
    # A name of this process and thread: two maintenance passes never write the same file.
    tmp = root / f".summary-{os.getpid()}-{threading.get_native_id()}.tmp"
    write_whole(root / SUMMARY_NAME, data, tmp=tmp, mode=0o644)
