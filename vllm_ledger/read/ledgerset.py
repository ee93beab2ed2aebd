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
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from vllm_ledger.read import coverage as cov
from vllm_ledger.read.attribution import CreditReads, FileCredits
from vllm_ledger.read.connections import Connections
from vllm_ledger.read.declared_stops import load_declarations
from vllm_ledger.read.gathered import Gathered, gather
from vllm_ledger.read.open_ledger import classify_error
from vllm_ledger.read.snapshot import (
    LedgerSnapshot,
    Sums,
    SumsByEngine,
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


Source = LedgerSnapshot | SummaryRun  # what a view reads: a file, or a run answered whole


class LedgerSet:
    """The ledgers under some roots as read at one instant (``now_ts``)."""

    def __init__(
        self,
        roots: Sequence[Path],
        now_ts: float,
        read: Gathered,
        connections: Connections,
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
        self.declarations, self.declaration_errors = load_declarations(self.roots)
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
        connections = Connections(busy_timeout_s, max_open_files)
        try:
            with gc_paused():
                read = gather(roots, now, connections)
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
        """Files created moments ago that hold no commit yet (``open_ledger.EMPTY_GRACE_S``)."""
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
