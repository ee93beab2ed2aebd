"""What one read of the roots gathered: the runs discovery found, each summarised run the
summary answers whole kept as one ``SummaryRun``, every other file as one ``LedgerSnapshot``
(from its summary entry where that still matches, else opened once), de-duplicated by run,
writer and generation; the files that could not be read, at their place in discovery; and the
folders that could not be listed. ``LedgerSet`` holds one and reads through it."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from vllm_ledger.format import paths
from vllm_ledger.read import summary
from vllm_ledger.read.connections import Connections
from vllm_ledger.read.discovery import Found, Unseen, discover_runs
from vllm_ledger.read.open_ledger import open_snapshot
from vllm_ledger.read.snapshot import LedgerSnapshot
from vllm_ledger.read.summary_entry import snapshot_from
from vllm_ledger.read.summary_run import SummaryRun


def gather(roots: Sequence[Path], now_ts: float, connections: Connections) -> Gathered:
    """Discover the runs under ``roots`` and take each: whole from the summary where it answers
    the run, else file by file."""
    indexes: dict[Path, summary.Index] = {}
    unseen: list[Unseen] = []
    read = Gathered(now_ts, connections, indexes)
    found: list[tuple[int, LedgerSnapshot | SummaryRun]] = []
    place = 0
    for files in discover_runs(roots, unseen):
        root = files[0].root
        if root not in indexes:
            indexes[root] = summary.read_index(root)
        whole = indexes[root].summary_run(files) if indexes[root] else None
        if whole is not None:
            found.append((place, whole))
        else:
            found += ((place + i, read.one(f)) for i, f in enumerate(files))
        place += len(files)
    read.unseen = [_unseen_snapshot(u, roots) for u in unseen]
    # A run answered whole must be the only source of its id: where another file
    # or run claims it (a copy under a second root, a file that cannot be read),
    # its files are taken one by one, as without a summary.
    claims = Counter(
        x.run_id for _place, x in found if isinstance(x, SummaryRun) or x.status != "starting"
    )
    claims.update(s.run_id for s in read.unseen)
    for at, x in found:
        if not isinstance(x, SummaryRun):
            read.add(at, x)
        elif claims[x.run_id] == 1:
            read.add_run(at, x)
        else:
            for i, f in enumerate(x.found):
                read.add(at + i, read.one(f))
    return read


class Gathered:
    """What one read found, in discovery's order: readable files (de-duplicated) and runs
    answered whole, files that could not be read (with their place in discovery), and what
    could not be listed. Takes a summarised run's files when first asked."""

    def __init__(
        self, now_ts: float, connections: Connections, indexes: dict[Path, summary.Index]
    ) -> None:
        self.now_ts = now_ts
        self.connections = connections
        self.indexes = indexes
        # by (run, writer, generation), or the run's id
        self.items: dict[object, LedgerSnapshot | SummaryRun] = {}
        self.failed: list[tuple[int, LedgerSnapshot]] = []  # (place in discovery, file)
        self.starting = 0  # files created in the last moments, nothing committed yet
        self.unseen: list[LedgerSnapshot] = []
        self.place: dict[int, int] = {}  # a SummaryRun's place in discovery, by id
        self.files: dict[int, list[LedgerSnapshot]] = {}  # a SummaryRun's readable files, by id
        self.broken: set[int] = set()  # runs with a file that could not be read when taken

    def one(self, found: Found) -> LedgerSnapshot:
        """One file's snapshot: from its summary entry where that still matches, else opened."""
        entries = self.indexes[found.root].entries(found.run_name)
        snap = snapshot_from(found, entries) if entries else None
        if snap is None:
            snap, conn = open_snapshot(
                found.path,
                now_ts=self.now_ts,
                busy_timeout_s=self.connections.busy_timeout_s,
                st=found.stat,
            )
            if conn is not None:
                self.connections.adopt(found.path, conn)
        if snap.ok:
            snap._connect = _connector(self.connections, found.path)
        return snap

    def add(self, place: int, snap: LedgerSnapshot) -> None:
        if not snap.ok:
            if snap.status != "starting":
                self.failed.append((place, snap))
            else:
                self.starting += 1
            return
        key = (snap.run_id, snap.writer_rank, snap.generation)
        prev = self.items.get(key)
        if not isinstance(prev, LedgerSnapshot) or snap.last_seq > prev.last_seq:
            self.items[key] = snap

    def add_run(self, place: int, run: SummaryRun) -> None:
        self.items[id(run)] = run
        self.place[id(run)] = place

    def files_of(self, run: SummaryRun) -> list[LedgerSnapshot]:
        """The run's readable files, taken one by one (once). A file that cannot be read
        marks the run ``broken`` and goes among the failed files, at its place."""
        got = self.files.get(id(run))
        if got is None:
            got = []
            place = self.place[id(run)]
            for i, found in enumerate(run.found):
                snap = self.one(found)
                if snap.ok:
                    got.append(snap)
                else:
                    self.broken.add(id(run))
                    if snap.status != "starting":
                        self.failed.append((place + i, snap))
            self.files[id(run)] = got
        return got

    def intact(self, run: SummaryRun) -> bool:
        """Whether the run still stands for all of its files, each readable."""
        if id(run) in self.broken:
            return False
        return all(s.ok for s in self.files.get(id(run), ()))

    def snapshots(self) -> list[LedgerSnapshot]:
        out: list[LedgerSnapshot] = []
        for x in self.items.values():
            if isinstance(x, SummaryRun):
                out += self.files_of(x)
            else:
                out.append(x)
        return [*out, *self.failed_in_order(), *self.unseen]

    def sources(self) -> list[LedgerSnapshot | SummaryRun]:
        out: list[LedgerSnapshot | SummaryRun] = []
        for x in self.items.values():
            if isinstance(x, SummaryRun) and not self.intact(x):
                out += self.files_of(x)
            else:
                out.append(x)
        return [*out, *self.failed_in_order(), *self.unseen]

    def failed_in_order(self) -> list[LedgerSnapshot]:
        return [snap for _place, snap in sorted(self.failed, key=lambda p: p[0])]


def _connector(connections: Connections, path: Path) -> Callable[[], sqlite3.Connection]:
    """How a snapshot reaches its file: through the set's connections, reopened if evicted."""
    return lambda: connections.get(path)


def _unseen_snapshot(u: Unseen, roots: Sequence[Path]) -> LedgerSnapshot:
    """A directory the reader could not list, as a file that could not be read: named, and the
    time it may hide uncovered (its run's, where its name says; otherwise all of it)."""
    denied = isinstance(u.error, PermissionError)
    named = paths.parse_ledger_name(u.path.name)
    if named is not None:  # a ledger file (one whose marker outlived it, or one gone stat'ing)
        return LedgerSnapshot(
            path=u.path,
            status="denied" if denied else "unreadable",
            detail=f"cannot read: {u.error.strerror or u.error}",
            run_id=u.path.parent.name,
            writer_rank=named[0],
            generation=named[1],
        )
    run_id = "" if u.path in roots else u.path.name
    return LedgerSnapshot(
        path=u.path,
        status="denied" if denied else "unreadable",
        detail=f"cannot list: {u.error.strerror or u.error}",
        run_id=run_id,
    )
