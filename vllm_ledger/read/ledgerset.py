"""Every ledger under the roots, read once: the one read behind every view.

``LedgerSet.read(roots, clock=...)`` discovers the files, takes each finished file's facts from
the summary of finished files where it still matches, and opens every other file once,
read-only, in one read transaction that stays open while the set lives. Window sums are then
answered from those connections (or from the summary's whole-file totals), memoised per file
and window, so the report, its breakdowns, a timeline, the HTML page, the bot status, the
exporter, cost and verify all read from the same snapshot and open each file at most once.
Coverage is computed once per instant and selection.

Use it as a context manager: the connections close with it. At most ``MAX_OPEN_FILES``
connections are held; past that the least recently used is closed and reopened if asked again
(only roots of thousands of unsummarised files get there).
"""

from __future__ import annotations

import contextlib
import gc
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType

from vllm_ledger.read import coverage as cov
from vllm_ledger.read import summary
from vllm_ledger.read.discovery import Unseen, discover
from vllm_ledger.read.snapshot import (
    LedgerSnapshot,
    Sums,
    SumsByEngine,
    classify_error,
    open_snapshot,
    reopen,
)
from vllm_ledger.read.values import BadValues
from vllm_ledger.read.windows import Window
from vllm_ledger.write import declarations, paths, store

MAX_OPEN_FILES = 256


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a block that builds many small acyclic objects
    (reading a root builds tens of thousands: snapshots, spans, sums); the collector would
    walk them over and over for nothing. Reference counting frees them as usual."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


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


class LedgerSet:
    """The ledgers under some roots as read at one instant (``now_ts``)."""

    def __init__(
        self,
        roots: Sequence[Path],
        now_ts: float,
        snapshots: list[LedgerSnapshot],
        connections: _Connections,
    ) -> None:
        self.roots = tuple(Path(r) for r in roots)
        self.now_ts = now_ts
        self.snapshots = snapshots
        self._connections = connections
        self._coverage: dict[tuple[float, tuple[int, ...]], cov.CoverageModel] = {}
        self.late_failures = 0  # files that failed when a window was first asked of them
        # Declared stops under the roots (``write/declarations.py``), and the lines refused;
        # ``strict`` ignores every declaration (the seed's rule alone).
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
        by_key: dict[tuple[str, int, int], LedgerSnapshot] = {}
        others: list[LedgerSnapshot] = []
        indexes: dict[Path, dict[str, summary.Entry]] = {}
        unseen: list[Unseen] = []
        try:
            with gc_paused():
                for found in discover(roots, unseen):
                    if found.root not in indexes:
                        indexes[found.root] = summary.load(found.root)
                    snap = summary.snapshot_from(found, indexes[found.root])
                    if snap is None:
                        snap, conn = open_snapshot(
                            found.path, now_ts=now, busy_timeout_s=busy_timeout_s, st=found.stat
                        )
                        if conn is not None:
                            connections.adopt(found.path, conn)
                    if not snap.ok:
                        if snap.status != "starting":
                            others.append(snap)
                        continue
                    snap._connect = _connector(connections, found.path)
                    key = (snap.run_id, snap.writer_rank, snap.generation)
                    prev = by_key.get(key)
                    if prev is None or snap.last_seq > prev.last_seq:
                        by_key[key] = snap
        except BaseException:
            connections.close()
            raise
        others += [_unseen_snapshot(u, roots) for u in unseen]
        return cls(roots, now, [*by_key.values(), *others], connections)

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

    @property
    def opens(self) -> int:
        """Ledger files opened so far (each open file once, unless evicted and reopened)."""
        return self._connections.opens

    def select(
        self, instance: int | str | None = None, model: str | None = None
    ) -> list[LedgerSnapshot]:
        """Keep one instance or model; files that cannot be read stay (unknown owner).

        ``instance`` is what ``report --by instance`` prints (``gpu1:8000``: that instance
        only), or a port (``8000`` or ``"8000"``: the instances on that port on every host,
        e.g. one per container host name). ``model`` is a served model name, or the names
        joined by commas as ``--by model`` prints them.
        """
        snaps = self.snapshots
        if instance is not None:
            snaps = [s for s in snaps if not s.ok or instance_matches(instance, s)]
        if model is not None:
            snaps = [s for s in snaps if not s.ok or model_matches(model, s)]
        return snaps

    def sums(self, snap: LedgerSnapshot, w: Window) -> SumsByEngine:
        """One file's sums per engine for ``w``. A file that fails now is marked unreadable
        (and ``late_failures`` counts it, so a view can recompute its coverage)."""
        try:
            return snap.window_sums(w)
        except (sqlite3.Error, OSError, BadValues) as exc:
            status = "bad_values" if isinstance(exc, BadValues) else classify_error(exc)
            snap.status, snap.detail = status, str(exc)
            self.late_failures += 1
            self._coverage.clear()
            return {}

    def total(
        self, snaps: Sequence[LedgerSnapshot], w: Window, engine: int | None = None
    ) -> tuple[Sums, bool]:
        """The summed figures of ``snaps`` over ``w`` (one engine, or all), and whether an edge
        second was folded into an hour (the figure is then not exact)."""
        total = Sums()
        imprecise = False
        for s in snaps:
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

    def coverage(self, snaps: Sequence[LedgerSnapshot], at_ts: float) -> cov.CoverageModel:
        """Coverage of ``snaps`` as seen at ``at_ts``: computed once per selection and instant."""
        key = (at_ts, tuple(id(s) for s in snaps))
        got = self._coverage.get(key)
        if got is None:
            declared = (
                ()
                if self.strict
                else [(d.instance, d.from_ts, d.until_ts) for d in self.declarations]
            )
            got = cov.build(snaps, at_ts, no_ledger=not self.snapshots, declared=declared)
            self._coverage[key] = got
        return got


def instance_matches(instance: int | str, snap: LedgerSnapshot) -> bool:
    """Whether ``snap`` belongs to ``instance``: a port (an int, or digits only) matches every
    host's instance on that port; anything else must equal the instance key exactly."""
    if isinstance(instance, int) or (instance.isascii() and instance.isdigit()):
        return snap.instance.port is not None and snap.instance.port == int(instance)
    return snap.instance.key == instance


def model_matches(model: str, snap: LedgerSnapshot) -> bool:
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
            data = store.read_regular_file(path, declarations.MAX_FILE_BYTES)
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
