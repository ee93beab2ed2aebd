"""Every ledger under the roots, read once: the one read behind every view.

``LedgerSet.read(roots, clock=...)`` discovers the files, takes each finished run the summary
of finished files answers whole as one ``SummaryRun``, takes each other finished file's facts
from the summary where it still matches, and opens every other file once, read-only, in one
read transaction that stays open while the set lives. Window sums are then answered from
those connections (or from the summary's totals), memoised per file and window, so the
report, its breakdowns, a timeline, the HTML page, the bot status, the exporter, cost and
verify all read from the same snapshot and open each file at most once. Coverage is computed
once per instant and selection.

A view over ``sources()`` (the report) sees a summarised run as one source: a window that
holds all of its counts or none is answered from the record, any other from its files, which
are then taken from the summary (or opened) one by one. A view over ``snapshots`` or
``select()`` sees every file; each summarised run's files are taken on first use.

Use it as a context manager: the connections close with it. At most ``MAX_OPEN_FILES``
connections are held; past that the least recently used is closed and reopened if asked again
(only roots of thousands of unsummarised files get there).
"""

from __future__ import annotations

import contextlib
import gc
import math
import sqlite3
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal, TypeVar

from vllm_ledger import infile
from vllm_ledger.format import declarations, paths
from vllm_ledger.read import coverage as cov
from vllm_ledger.read import summary
from vllm_ledger.read.attribution import CreditReads, FileCredits
from vllm_ledger.read.discovery import Found, Unseen, discover_runs
from vllm_ledger.read.periods import is_future
from vllm_ledger.read.snapshot import (
    LedgerSnapshot,
    Sums,
    SumsByEngine,
    classify_error,
    open_snapshot,
    reopen,
)
from vllm_ledger.read.summary_run import SummaryRun
from vllm_ledger.read.values import BadValues
from vllm_ledger.read.windows import Window

MAX_OPEN_FILES = 256


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a block that builds many small acyclic objects
    (reading a root builds tens of thousands: snapshots, spans, sums); the collector would
    walk them over and over for nothing. Reference counting frees them as usual.

    When the block ends, what it built is set aside as long-lived (``gc.freeze``) rather than
    walked once more as young objects by the first collection after it (about 10 ms for a
    root of thousands of runs); ``LedgerSet.close`` hands it back (``gc.unfreeze``). Not where
    the process keeps objects frozen itself (a server that forks): those stay as they are."""
    global _frozen_by_reads
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            if _frozen_by_reads or gc.get_freeze_count() == 0:
                gc.freeze()
                _frozen_by_reads = True
            gc.enable()


_frozen_by_reads = False  # whether what is frozen was set aside by ``gc_paused``


def _gc_release() -> None:
    """Hand back to the collector what ``gc_paused`` set aside."""
    global _frozen_by_reads
    if _frozen_by_reads:
        gc.unfreeze()
        _frozen_by_reads = False


class _Connections:
    """The open read-only connections, least recently used first."""

    def __init__(self, busy_timeout_s: float, max_open: int) -> None:
        self.busy_timeout_s = busy_timeout_s
        self.max_open = max_open
        self._open: OrderedDict[Path, sqlite3.Connection] = OrderedDict()
        self.opens = 0

    def adopt(self, path: Path, conn: sqlite3.Connection) -> None:
        self.opens += 1
        self._open[path] = conn
        self._trim()

    def get(self, path: Path) -> sqlite3.Connection:
        conn = self._open.get(path)
        if conn is not None:
            self._open.move_to_end(path)
            return conn
        conn = reopen(path, self.busy_timeout_s)
        self.adopt(path, conn)
        return conn

    def _trim(self) -> None:
        while len(self._open) > self.max_open:
            _path, conn = self._open.popitem(last=False)
            conn.close()

    def close(self) -> None:
        while self._open:
            _path, conn = self._open.popitem()
            conn.close()


Source = LedgerSnapshot | SummaryRun  # what a view reads: a file, or a run answered whole


class _Read:
    """What one read found, in discovery's order: readable files (de-duplicated) and runs
    answered whole, files that could not be read (with their place in discovery), and what
    could not be listed. Takes a summarised run's files when first asked."""

    def __init__(
        self, now_ts: float, connections: _Connections, indexes: dict[Path, summary.Index]
    ) -> None:
        self.now_ts = now_ts
        self.connections = connections
        self.indexes = indexes
        self.items: dict[object, Source] = {}  # by (run, writer, generation), or the run's id
        self.failed: list[tuple[int, LedgerSnapshot]] = []  # (place in discovery, file)
        self.starting = 0  # files created in the last moments, nothing committed yet
        self.unseen: list[LedgerSnapshot] = []
        self.place: dict[int, int] = {}  # a SummaryRun's place in discovery, by id
        self.files: dict[int, list[LedgerSnapshot]] = {}  # a SummaryRun's readable files, by id
        self.broken: set[int] = set()  # runs with a file that could not be read when taken

    def one(self, found: Found) -> LedgerSnapshot:
        """One file's snapshot: from its summary entry where that still matches, else opened."""
        entries = self.indexes[found.root].entries(found.run_name)
        snap = summary.snapshot_from(found, entries) if entries else None
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

    def sources(self) -> list[Source]:
        out: list[Source] = []
        for x in self.items.values():
            if isinstance(x, SummaryRun) and not self.intact(x):
                out += self.files_of(x)
            else:
                out.append(x)
        return [*out, *self.failed_in_order(), *self.unseen]

    def failed_in_order(self) -> list[LedgerSnapshot]:
        return [snap for _place, snap in sorted(self.failed, key=lambda p: p[0])]


class LedgerSet:
    """The ledgers under some roots as read at one instant (``now_ts``)."""

    def __init__(
        self,
        roots: Sequence[Path],
        now_ts: float,
        read: _Read,
        connections: _Connections,
    ) -> None:
        self.roots = tuple(Path(r) for r in roots)
        self.now_ts = now_ts
        self._read = read
        self._connections = connections
        self._coverage: dict[tuple[float, tuple[int, ...]], cov.CoverageModel] = {}
        self._credits: dict[tuple[int, int, int, str | None], FileCredits] = {}
        self._reads = CreditReads()  # label sets read once; nested windows ring by ring
        self.late_failures = 0  # files that failed when a window was first asked of them
        # Declared stops under the roots (``format/declarations.py``), and the lines refused;
        # ``strict`` ignores every declaration (the ledger's rule alone).
        self.declarations, self.declaration_errors = _load_declarations(self.roots)
        self.strict = False

    @classmethod
    def read(
        cls,
        roots: Iterable[Path],
        *,
        clock: Callable[[], float] = time.time,
        busy_timeout_s: float = 2.0,
        max_open_files: int = MAX_OPEN_FILES,
    ) -> LedgerSet:
        """Read every ledger under ``roots``, de-duplicated by run, writer and generation."""
        roots = [Path(r) for r in roots]
        now = clock()
        connections = _Connections(busy_timeout_s, max_open_files)
        indexes: dict[Path, summary.Index] = {}
        unseen: list[Unseen] = []
        read = _Read(now, connections, indexes)
        try:
            with gc_paused():
                found: list[tuple[int, Source]] = []
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
                    x.run_id
                    for _place, x in found
                    if isinstance(x, SummaryRun) or x.status != "starting"
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
        except BaseException:
            connections.close()
            raise
        return cls(roots, now, read, connections)

    def __enter__(self) -> LedgerSet:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._connections.close()
        _gc_release()

    @property
    def opens(self) -> int:
        """Ledger files opened so far (each open file once, unless evicted and reopened)."""
        return self._connections.opens

    @property
    def snapshots(self) -> list[LedgerSnapshot]:
        """Every file: readable ones (de-duplicated), then those that could not be read."""
        before = len(self._read.broken)
        out = self._read.snapshots()
        self._note_broken(before)
        return out

    def sources(self, instance: int | str | None = None, model: str | None = None) -> list[Source]:
        """As ``select``, with each run the summary answers whole as one source."""
        before = len(self._read.broken)
        out = self._read.sources()
        self._note_broken(before)
        return _selected(out, instance, model)

    def select(
        self, instance: int | str | None = None, model: str | None = None
    ) -> list[LedgerSnapshot]:
        """Keep one instance or model; files that cannot be read stay (unknown owner).

        ``instance`` is what ``report --by instance`` prints (``gpu1:8000``: that instance
        only), or a port (``8000`` or ``"8000"``: the instances on that port on every host,
        e.g. one per container host name). ``model`` is a served model name, or the names
        joined by commas as ``--by model`` prints them.
        """
        return _selected(self.snapshots, instance, model)

    def sums(self, source: Source, w: Window) -> SumsByEngine:
        """One source's sums per engine for ``w``. A file that fails now is marked unreadable
        (and ``late_failures`` counts it, so a view can recompute its coverage)."""
        if isinstance(source, SummaryRun):
            got = source.whole_sums(w)
            if got is not None:
                return got
            before = len(self._read.broken)
            files = self._read.files_of(source)
            self._note_broken(before)
            out: SumsByEngine = {}
            for snap in files:
                for eng, s in self.sums(snap, w).items():
                    out.setdefault(eng, Sums()).add(s)
            return out
        try:
            return source.window_sums(w)
        except (sqlite3.Error, OSError, BadValues) as exc:
            status = "bad_values" if isinstance(exc, BadValues) else classify_error(exc)
            source.status, source.detail = status, str(exc)
            self.late_failures += 1
            self._coverage.clear()
            return {}

    def credits(
        self, sources: Sequence[Source], w: Window, by: str | None = None, keep: bool = True
    ) -> FileCredits:
        """What ``sources`` credited in ``w``, per label set (whose tokens; ``read/attribution``);
        ``by`` (key, adapter, user, tenant): summed by that label alone, in SQL (the label sets
        keyed with the others empty). A file or summarised run the window holds none of is
        skipped (a file from before attribution that ended before the window leaves it whole),
        any other read file by file; a file that fails now is marked as in ``sums``. ``keep``
        False: the answer is not memoised (a long stream of windows keeps memory flat)."""
        out = FileCredits()
        for source in sources:
            if not source.ok or not _reaches(source, w):
                continue
            if isinstance(source, SummaryRun):
                before = len(self._read.broken)
                files = self._read.files_of(source)
                self._note_broken(before)
            else:
                files = [source]
            if len(files) == 1 and len(sources) == 1:
                return self._file_credits(files[0], w, by, keep)  # nothing to add up
            for snap in files:
                out.add(self._file_credits(snap, w, by, keep))
        return out

    def _file_credits(
        self, snap: LedgerSnapshot, w: Window, by: str | None, keep: bool
    ) -> FileCredits:
        key = (id(snap), w.start_ts, w.cutoff_ts, by)
        got = self._credits.get(key)
        if got is not None:
            return got
        if not snap.ok or snap._connect is None:
            return FileCredits()
        try:
            got = self._reads.read(snap, snap._connect(), w, by)
        except (sqlite3.Error, OSError, BadValues) as exc:
            status = "bad_values" if isinstance(exc, BadValues) else classify_error(exc)
            snap.status, snap.detail = status, str(exc)
            self.late_failures += 1
            self._coverage.clear()
            return FileCredits()
        if keep:
            self._credits[key] = got
        return got

    def _note_broken(self, before: int) -> None:
        # A summarised run whose file could not be read when taken: as a late failure.
        if len(self._read.broken) != before:
            self.late_failures += len(self._read.broken) - before
            self._coverage.clear()

    def total(
        self, sources: Sequence[Source], w: Window, engine: int | None = None
    ) -> tuple[Sums, bool]:
        """The summed figures of ``sources`` over ``w`` (one engine, or all), and whether an
        edge second was folded into an hour (the figure is then not exact)."""
        total = Sums()
        imprecise = False
        for s in sources:
            if not s.ok:
                continue
            for eng, sums in self.sums(s, w).items():
                if engine is None or eng == engine:
                    total.add(sums)
            imprecise = imprecise or s.imprecise(w)
        return total, imprecise

    def set_strict(self, strict: bool) -> None:
        """Ignore declared stops (or stop ignoring them) from now on."""
        if strict != self.strict:
            self.strict = strict
            self._coverage.clear()

    @property
    def starting(self) -> int:
        """Files created moments ago that hold no commit yet (``snapshot.EMPTY_GRACE_S``)."""
        return self._read.starting

    @property
    def no_ledger(self) -> bool:
        """Nothing at all under the roots: no ledger file, nothing that could not be read."""
        read = self._read
        return not (read.items or read.failed or read.unseen)

    def _rollups(self, sources: Sequence[Source]) -> list[tuple[int, int]]:
        """(start, end) of every rollup row of these sources that disagrees with what it adds
        up (``LedgerSnapshot.rollup_mismatches``). A file that fails now is marked as in
        ``sums``."""
        out: list[tuple[int, int]] = []
        for s in sources:
            if not isinstance(s, LedgerSnapshot) or not s.ok:
                continue
            try:
                out += [(m.start_ts, m.end_ts) for m in s.rollup_mismatches()]
            except BadValues:
                continue  # the sums judge the values, and name the one at fault
            except (sqlite3.Error, OSError) as exc:
                s.status, s.detail = classify_error(exc), str(exc)
                self.late_failures += 1
                self._coverage.clear()
        return out

    def coverage(self, sources: Sequence[Source], at_ts: float) -> cov.CoverageModel:
        """Coverage of ``sources`` as seen at ``at_ts``: computed once per selection and
        instant."""
        key = (at_ts, tuple(id(s) for s in sources))
        got = self._coverage.get(key)
        if got is None:
            declared = (
                ()
                if self.strict
                else [(d.instance, d.from_ts, d.until_ts) for d in self.declarations]
            )
            rollups = self._rollups(sources)
            got = cov.build(
                sources,  # a SummaryRun is a ClosedRun: its coverage is ready
                at_ts,
                no_ledger=self.no_ledger,
                declared=declared,
                rollups=rollups,
            )
            self._coverage[key] = got
        return got


MatchReason = Literal["no_ledger", "never_committed", "no_match", "no_run_in_period"]
MAX_KNOWN_NAMES = 20  # names listed of each kind; the rest are counted


@dataclass(frozen=True)
class NothingMatched:
    """Why a view over the roots holds nothing at all, and what the roots do hold.

    ``reason``: ``no_ledger`` (no ledger file, nothing unreadable: the plugin is off or the
    root is wrong), ``never_committed`` (ledger files, each created by a writer that never
    committed to it: a full disk, no permission, a crash before the first commit), ``no_match``
    (ledgers, none of the instance or model asked for) or ``no_run_in_period`` (none of the
    matching runs recorded in the period asked for).
    ``models`` and ``instances``: every model and instance the readable ledgers name (at most
    ``MAX_KNOWN_NAMES`` of each, ``more_models``/``more_instances`` counting the rest);
    ``unreadable``: files or folders that could not be read (they may hold what was asked);
    ``never_committed``: of those, files their writer created and never committed to, and
    ``never_since_ts`` the earliest of their creations (None: unknown); ``starting``: files
    created moments ago with no commit yet (not counted elsewhere: a writer starting)."""

    reason: MatchReason
    roots: tuple[str, ...]
    instance: int | str | None
    model: str | None
    since_ts: float | None
    until_ts: float | None
    models: tuple[str, ...]
    instances: tuple[str, ...]
    more_models: int = 0
    more_instances: int = 0
    unreadable: int = 0
    never_committed: int = 0
    never_since_ts: float | None = None
    starting: int = 0


def nothing_matched(
    ls: LedgerSet,
    *,
    instance: int | str | None = None,
    model: str | None = None,
    since_ts: float | None = None,
    until_ts: float | None = None,
    at_ts: float | None = None,
    cutoff_ts: int | None = None,
) -> NothingMatched | None:
    """None when the roots hold a readable ledger of ``instance`` and ``model`` (each None:
    any) with a run that recorded in ``[since_ts, until_ts)`` (None: no bound); else why not.
    With ``cutoff_ts``, a period that starts at or after it (``periods.is_future``) holds
    nothing any run can have recorded yet, a live one and unreadable files included.

    The one decision every view's command makes before it prints figures that would all be
    zero for no reason the figures show (``report``, ``timeline``, ``export``, ``cost``,
    ``status``). A run counts from its first proof to its last (a live or stale one: on to
    the end of time); a file that could not be read never makes it "nothing"."""
    every = ls.sources()
    readable = [s for s in every if s.ok]
    unreadable = len(every) - len(readable)
    never = [s for s in every if isinstance(s, LedgerSnapshot) and s.status == "never_committed"]
    births = [s.created_ts for s in never if s.created_ts is not None]
    models = sorted({",".join(s.instance.served_model_names) or "?" for s in readable})
    instances = sorted({s.instance.key for s in readable})

    def made(reason: MatchReason) -> NothingMatched:
        return NothingMatched(
            reason=reason,
            roots=tuple(str(r) for r in ls.roots),
            instance=instance,
            model=model,
            since_ts=since_ts,
            until_ts=until_ts,
            models=tuple(models[:MAX_KNOWN_NAMES]),
            instances=tuple(instances[:MAX_KNOWN_NAMES]),
            more_models=max(0, len(models) - MAX_KNOWN_NAMES),
            more_instances=max(0, len(instances) - MAX_KNOWN_NAMES),
            unreadable=unreadable,
            never_committed=len(never),
            never_since_ts=min(births, default=None),
            starting=ls.starting,
        )

    if ls.no_ledger:
        return made("no_ledger")
    if never and len(never) == unreadable:
        # Files, and not one commit in any: whatever the writers saw is unknown.
        return made("never_committed")
    chosen = ls.sources(instance, model)
    if (instance is not None or model is not None) and not any(s.ok for s in chosen):
        return made("no_match")
    if since_ts is None and until_ts is None:
        return None
    if cutoff_ts is not None and since_ts is not None and is_future(since_ts, cutoff_ts):
        return made("no_run_in_period")
    if unreadable:  # it may hold the period
        return None
    lo = -math.inf if since_ts is None else since_ts
    hi = math.inf if until_ts is None else until_ts
    model_ = ls.coverage(chosen, ls.now_ts if at_ts is None else at_ts)
    return None if model_.recorded_in(lo, hi) else made("no_run_in_period")


def _reaches(source: Source, w: Window) -> bool:
    """Whether a file's records or proofs reach into ``w`` (a summarised run: whether the
    window holds any of it). A file that ended before the window, or began after it, credits
    nothing there."""
    if isinstance(source, SummaryRun):
        return source.whole_sums(w) != {}
    lows = [t for t in (source.first_bucket_ts, *(a for a, _b in source.spans)) if t is not None]
    highs = [t for t in (source.last_end_ts, source.last_proof_ts) if t is not None]
    if not lows or not highs:
        return False  # nothing recorded, nothing proven
    return min(lows) < w.cutoff_ts and math.floor(max(highs)) >= w.start_ts


S = TypeVar("S", LedgerSnapshot, Source)


def _selected(sources: list[S], instance: int | str | None, model: str | None) -> list[S]:
    if instance is not None:
        sources = [s for s in sources if not s.ok or instance_matches(instance, s)]
    if model is not None:
        sources = [s for s in sources if not s.ok or model_matches(model, s)]
    return sources


def instance_matches(instance: int | str, snap: Source) -> bool:
    """Whether ``snap`` belongs to ``instance``: a port (an int, or digits only) matches every
    host's instance on that port; anything else must equal the instance key exactly."""
    if isinstance(instance, int) or (instance.isascii() and instance.isdigit()):
        return snap.instance.port is not None and snap.instance.port == int(instance)
    return snap.instance.key == instance


def model_matches(model: str, snap: Source) -> bool:
    names = snap.instance.served_model_names
    return model in names or (len(names) > 1 and model == ",".join(names))


def _load_declarations(
    roots: Sequence[Path],
) -> tuple[list[declarations.Declaration], list[tuple[Path, str]]]:
    found: list[declarations.Declaration] = []
    errors: list[tuple[Path, str]] = []
    for root in roots:
        path = declarations.path_in(root)
        try:
            data = infile.read_regular_file(path, declarations.MAX_FILE_BYTES)
        except FileNotFoundError:
            continue
        except OSError as exc:
            errors.append((path, f"cannot read: {exc.strerror or exc}"))
            continue
        got, bad = declarations.parse(data)
        found += got
        errors += [(path, f"refused {e}") for e in bad]
    return found, errors


def _connector(connections: _Connections, path: Path) -> Callable[[], sqlite3.Connection]:
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
