"""Counters that never go down while the exporter runs. Pure: the exporter feeds it each read.

Prometheus takes any fall of a counter for a reset, and ``increase()`` then counts the whole new
value again. The ledgers' totals can fall for reasons that are no reset: a run folder archived
or moved away, a file that cannot be read for a moment (compaction holds it, damage), a file
replaced by an older, smaller copy. ``CounterMemory`` remembers, per ledger file, the largest
counts it has seen, and the counters serve the sum of those:

- a file that is gone keeps its last counts (``vanished``); a run none of whose files is there
  any more is a vanished run, named ``run_vanished``;
- a file that is there but cannot be read keeps its last counts (``unreadable``); so do the
  files of a run folder that cannot be listed, and every missing file while something whose run
  is unknown (a root) cannot be read, since it may hide them;
- a file that holds less than before keeps its largest counts (``shrank``), field by field;
- a file is known by its run, writer and generation (the key the reader de-duplicates by), not
  by its path: a run folder that comes back, or moves to another root, is counted once, and
  compaction, which rewrites rows inside the same file and leaves every total as it was, is
  neither a loss nor a second count.

Each file carries its label pair (``Labels``: the instance as ``report --by instance`` names it,
the served model names as ``report --by model`` does), remembered with its counts, so whatever
is held is held in its own pair's series (``Held.by_labels``): every pair's counts never go
down either, and the pairs add up to ``Held.counts``. A file may instead carry several label
sets, each with its counts (``FileCounts.parts``: whose tokens, per key and adapter), each held
the same way; a memory counts ``width`` figures per label set (``COUNT_NAMES`` by default).

Memory is a few numbers per file, for at most ``MAX_TRACKED_FILES`` files. Past that, the runs
whose last proof is oldest are folded into one total per run (their files forgotten, about 200
bytes a run), held the same way: a folded run serves the larger of its folded total and what its
files add up to now.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from vllm_ledger import figures

# The figures counted, by ``figures.Figure.name`` (as in ``Sums``).
COUNT_NAMES: tuple[str, ...] = figures.names()
Counts = tuple[int, ...]  # one figure per COUNT_NAMES, in that order
ZERO: Counts = (0,) * len(COUNT_NAMES)
# (ledger_instance, model_name): as ``report --by instance`` and ``--by model`` name them; or
# any tuple of label values a memory's files carry (``FileCounts.parts``).
Labels = tuple[str, ...]
NO_LABELS: Labels = ("", "")

HoldReason = Literal["vanished", "unreadable", "shrank"]
HOLD_REASONS: tuple[HoldReason, ...] = ("vanished", "unreadable", "shrank")

MAX_TRACKED_FILES = 20_000

FileKey = tuple[int, int]  # (writer rank, generation) within a run


@dataclass(frozen=True)
class FileCounts:
    """One readable ledger file as one read saw it: whole-file counts and the time it spans."""

    run_id: str
    writer_rank: int
    generation: int
    counts: Counts
    first_ts: float | None = None
    last_ts: float | None = None
    labels: Labels = NO_LABELS
    # The file's counts per label set, when it carries several (``counts``/``labels`` unused).
    parts: tuple[tuple[Labels, Counts], ...] | None = None

    def rows(self) -> dict[Labels, Counts]:
        """The file's counts per label set."""
        if self.parts is None:
            return {self.labels: self.counts}
        out: dict[Labels, Counts] = {}
        for labels, counts in self.parts:
            out[labels] = _sum((out.get(labels, ()), counts))
        return out


@dataclass(frozen=True)
class Sighting:
    """What one read of the roots saw: the files it could read, and what it could not."""

    files: Sequence[FileCounts]
    # Files there that could not be read: (run id, writer rank, generation).
    unreadable_files: frozenset[tuple[str, int, int]] = frozenset()
    # Run folders (by name) that are there but could not be read or listed.
    unreadable_runs: frozenset[str] = frozenset()
    # Something unreadable whose run is unknown (a root that cannot be listed): any run may be
    # behind it, so nothing missing is called vanished while it lasts.
    unknown_unreadable: bool = False


@dataclass(frozen=True)
class VanishedRun:
    run_id: str
    first_ts: float | None
    last_ts: float | None
    counts: Counts
    instances: tuple[str, ...] = ()  # the ledger_instance(s) its files belonged to

    def overlaps(self, start_ts: float, cutoff_ts: float) -> bool:
        """Whether the run's time falls in ``[start_ts, cutoff_ts)`` (unknown time: always)."""
        return (self.first_ts is None or self.first_ts < cutoff_ts) and (
            self.last_ts is None or self.last_ts >= start_ts
        )


@dataclass(frozen=True)
class Held:
    """What the counters serve after a read, and what of it is held, and why."""

    counts: Counts
    files_held: dict[HoldReason, int]  # files (a folded run counts as its files) per reason
    vanished_runs: tuple[VanishedRun, ...]
    tracked_files: int
    folded_runs: int
    # What changed with this read, for the exporter to say once.
    newly_vanished: tuple[str, ...] = ()
    returned: tuple[str, ...] = ()
    newly_shrank: tuple[tuple[str, int, int], ...] = ()
    # The counts per label pair (sorted); they add up to ``counts``.
    by_labels: tuple[tuple[Labels, Counts], ...] = ()

    def count(self, name: str) -> int:
        return self.counts[COUNT_NAMES.index(name)]


def _zero(width: int) -> Counts:
    return (0,) * width


def _empty(width: int) -> Held:
    return Held(_zero(width), dict.fromkeys(HOLD_REASONS, 0), (), 0, 0)


EMPTY = _empty(len(COUNT_NAMES))


class _File:
    __slots__ = ("by_labels", "reason")

    def __init__(self, by_labels: dict[Labels, Counts]) -> None:
        self.by_labels = by_labels  # per label set, the largest seen, field by field
        self.reason: HoldReason | None = None  # why it is held now, None when read in full


@dataclass
class _Run:
    files: dict[FileKey, _File] = field(default_factory=dict)
    # The run's totals per label pair once its files were forgotten.
    folded: dict[Labels, Counts] | None = None
    folded_files: int = 0
    folded_reason: HoldReason | None = None
    first_ts: float | None = None
    last_ts: float | None = None
    vanished: bool = False

    def by_labels(self) -> dict[Labels, Counts]:
        if self.folded is not None:
            return self.folded
        return _by_labels(item for f in self.files.values() for item in f.by_labels.items())

    def total(self) -> Counts:
        return _sum(self.by_labels().values())


def _by_labels(many: Iterable[tuple[Labels, Counts]]) -> dict[Labels, Counts]:
    out: dict[Labels, Counts] = {}
    for labels, counts in many:
        out[labels] = _sum((out.get(labels, ()), counts))
    return out


def _sum(many: Iterable[Counts]) -> Counts:
    """Field by field; an empty tuple counts as zeros of any width."""
    total: list[int] = []
    for counts in many:
        if len(total) < len(counts):
            total.extend([0] * (len(counts) - len(total)))
        for i, v in enumerate(counts):
            total[i] += v
    return tuple(total)


def _max(x: Counts, y: Counts) -> Counts:
    if not x or not y:
        return x or y
    return tuple(max(a, b) for a, b in zip(x, y, strict=True))


def _max_by_labels(x: dict[Labels, Counts], y: dict[Labels, Counts]) -> dict[Labels, Counts]:
    return {k: _max(x.get(k, ()), y.get(k, ())) for k in sorted({*x, *y})}


def _below(now: Counts, held: Counts) -> bool:
    if not held:
        return False
    if not now:
        return any(held)
    return any(n < h for n, h in zip(now, held, strict=True))


def _below_by_labels(now: dict[Labels, Counts], held: dict[Labels, Counts]) -> bool:
    return any(_below(now.get(k, ()), c) for k, c in held.items())


def _earliest(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _latest(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


class CounterMemory:
    """The largest counts seen per ledger file, across the reads of one exporter process."""

    def __init__(self, max_files: int = MAX_TRACKED_FILES, width: int = len(COUNT_NAMES)) -> None:
        self.max_files = max_files
        self.width = width  # figures per label set
        self._runs: dict[str, _Run] = {}
        self._tracked = 0
        self.last: Held = EMPTY if width == len(COUNT_NAMES) else _empty(width)

    def observe(self, seen: Sighting) -> Held:
        """Take one read in; return what the counters serve now."""
        by_run: dict[str, dict[FileKey, FileCounts]] = {}
        for f in seen.files:
            by_run.setdefault(f.run_id, {})[(f.writer_rank, f.generation)] = f
        newly_shrank = self._take_in(by_run)
        held, vanished, newly_vanished, returned = self._account(seen, by_run)
        if self._tracked > self.max_files:
            self._fold()
        by_labels = _by_labels(
            item for run in self._runs.values() for item in run.by_labels().items()
        )
        self.last = Held(
            counts=_sum((_zero(self.width), *by_labels.values())),
            files_held=held,
            vanished_runs=tuple(sorted(vanished, key=lambda v: v.run_id)),
            tracked_files=self._tracked,
            folded_runs=sum(1 for r in self._runs.values() if r.folded is not None),
            newly_vanished=tuple(sorted(newly_vanished)),
            returned=tuple(sorted(returned)),
            newly_shrank=tuple(sorted(newly_shrank)),
            by_labels=tuple(sorted(by_labels.items())),
        )
        return self.last

    def _take_in(self, by_run: dict[str, dict[FileKey, FileCounts]]) -> list[tuple[str, int, int]]:
        """Raise each file's memo (a folded run's: its run's) to what the file holds now, never
        lowering it; return the files that newly read below their memo."""
        newly_shrank: list[tuple[str, int, int]] = []
        for run_id, files in by_run.items():
            run = self._runs.get(run_id)
            if run is None:
                run = self._runs[run_id] = _Run()
            for f in files.values():
                run.first_ts = _earliest(run.first_ts, f.first_ts)
                run.last_ts = _latest(run.last_ts, f.last_ts)
            if run.folded is not None:
                now = _by_labels(item for f in files.values() for item in f.rows().items())
                shrank = _below_by_labels(now, run.folded)
                run.folded_reason = "shrank" if shrank else None
                run.folded = _max_by_labels(run.folded, now)
                continue
            for key, f in files.items():
                memo = run.files.get(key)
                rows = f.rows()
                if memo is None:
                    run.files[key] = _File(rows)
                    self._tracked += 1
                    continue
                shrank = _below_by_labels(rows, memo.by_labels)
                if shrank and memo.reason != "shrank":
                    newly_shrank.append((run_id, *key))
                memo.reason = "shrank" if shrank else None
                memo.by_labels = _max_by_labels(memo.by_labels, rows)
        return newly_shrank

    def _account(
        self, seen: Sighting, by_run: dict[str, dict[FileKey, FileCounts]]
    ) -> tuple[dict[HoldReason, int], list[VanishedRun], list[str], list[str]]:
        """Why each file not served as read is held (its run vanished, it could not be read, it
        shrank), the runs gone, and the runs that newly vanished or came back."""
        held = dict.fromkeys(HOLD_REASONS, 0)
        vanished: list[VanishedRun] = []
        newly_vanished: list[str] = []
        returned: list[str] = []
        there = {run_id for run_id, _rank, _gen in seen.unreadable_files}
        for run_id, run in self._runs.items():
            present = by_run.get(run_id)
            blind = seen.unknown_unreadable or run_id in seen.unreadable_runs
            if present is None and not blind and run_id not in there:
                if not run.vanished:
                    newly_vanished.append(run_id)
                run.vanished = True
                instances = tuple(sorted({labels[0] for labels in run.by_labels()}))
                vanished.append(
                    VanishedRun(run_id, run.first_ts, run.last_ts, run.total(), instances)
                )
                held["vanished"] += run.folded_files if run.folded is not None else len(run.files)
                continue
            if run.vanished and present is not None:
                returned.append(run_id)
            run.vanished = False
            if run.folded is not None:
                if present is None:  # there, but nothing of it could be read
                    held["unreadable"] += run.folded_files
                elif run.folded_reason is not None:
                    held[run.folded_reason] += 1
                continue
            for key, memo in run.files.items():
                if present is not None and key in present:
                    if memo.reason == "shrank":
                        held["shrank"] += 1
                    continue
                gone: HoldReason = (
                    "unreadable" if blind or (run_id, *key) in seen.unreadable_files else "vanished"
                )
                memo.reason = gone
                held[gone] += 1
        return held, vanished, newly_vanished, returned

    def _fold(self) -> None:
        """Fold the runs that ended longest ago into one total each, down to 3/4 of the cap."""
        target = self.max_files * 3 // 4
        order = sorted(
            (r for r in self._runs.values() if r.folded is None and r.files),
            key=lambda r: -1.0 if r.last_ts is None else r.last_ts,
        )
        for run in order:
            if self._tracked <= target:
                break
            run.folded = run.by_labels()
            run.folded_files = len(run.files)
            run.folded_reason = None
            self._tracked -= len(run.files)
            run.files = {}


__all__ = [
    "COUNT_NAMES",
    "HOLD_REASONS",
    "MAX_TRACKED_FILES",
    "CounterMemory",
    "FileCounts",
    "Held",
    "HoldReason",
    "Labels",
    "Sighting",
    "VanishedRun",
]
