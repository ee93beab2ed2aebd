"""Whose tokens, read for the exporter: each ledger file's credits per label set (the counters'
memory takes them as it takes the ledger's counts) and the report's windows by each label.

Every read goes through the ``LedgerSet`` (its memoised, checked credits: ``read/attribution``)
and ``read/whose.py`` (the one place that turns a window's figures and credits into rows and the
not-attributed rest). Two things keep a scrape cheap when users are many:

- each file's credits are kept by the exporter's labels only (``projected``): the rows by one
  label and the reasons are the same over far fewer label sets;
- a cleanly closed file's whole-life credits are kept across reads while the file is unchanged
  on disk (``ClosedFiles``), and a window that holds all of a file reads it as the ``total``
  window does: an exporter reads again only the files still written, and those that straddle a
  window's start.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from vllm_ledger.names import ATTRIBUTION_LABELS, NOT_ATTRIBUTED_REASONS
from vllm_ledger.observe.counters import Counts, FileCounts, Labels, Sighting
from vllm_ledger.read.attribution import Credited, FileCredits
from vllm_ledger.read.ledgerset import LedgerSet, Source
from vllm_ledger.read.report import Report, WindowReport, report_figures
from vllm_ledger.read.snapshot import LedgerSnapshot, Sums
from vllm_ledger.read.whose import By, WhoseWindow, whose
from vllm_ledger.read.windows import Window

# The figures counted per label set: tokens, finished requests, and events (requests aborted
# for a credited set, faults for the fault set).
WIDTH = 5
CREDITED, NOT_ATTRIBUTED, FAULT = "credited", "not_attributed", "fault"
MAX_CLOSED_FILES = 2_000  # closed files whose credits an exporter keeps between reads
_PLACE = {name: i for i, name in enumerate(ATTRIBUTION_LABELS)}


def file_parts(
    file_window: WindowReport, credits: FileCredits, labels: Sequence[str]
) -> tuple[tuple[Labels, Counts], ...]:
    """One file's counts per label set over its whole life: credited sets projected on
    ``labels`` (with their aborted requests), what is not attributed per reason (``whose``'s
    rest, held at 0 where negative), and the faults. ``file_window`` holds the file's own
    figures."""
    out: dict[Labels, list[int]] = {}

    def add(key: Labels, p: int, g: int, c: int, r: int, e: int) -> None:
        got = out.setdefault(key, [0] * WIDTH)
        for i, v in enumerate((p, g, c, r, e)):
            got[i] += v

    for label, got in credits.by_label.items():
        reason = label[4]
        if reason not in ("", "aborted"):
            continue
        projected = (CREDITED, *(label[_PLACE[name]] for name in labels))
        if reason == "":
            add(projected, got.input_tokens, got.output_tokens, got.cached_tokens, got.requests, 0)
        else:
            add(projected, 0, 0, 0, 0, got.events)
    rest = whose(file_window, credits, "key").not_attributed
    for reason in NOT_ATTRIBUTED_REASONS:
        c = rest.reasons[reason]
        p, g, cached, r = c.input_tokens, c.output_tokens, c.cached_tokens, c.requests
        if p or g or cached or r:
            add((NOT_ATTRIBUTED, reason), max(0, p), max(0, g), max(0, cached), max(0, r), 0)
    if rest.faults:
        add((FAULT,), 0, 0, 0, 0, rest.faults)
    return tuple((key, tuple(v)) for key, v in sorted(out.items()))


class ClosedFiles:
    """The credits of cleanly closed ledger files (by the chosen labels), kept across reads
    while each file is unchanged on disk (its size, modification time and inode): an exporter
    reads again only the files still written, or changed (compacted). At most ``most`` files."""

    def __init__(self, most: int = MAX_CLOSED_FILES) -> None:
        self.most = most
        self.got: dict[Path, tuple[tuple[int, int, int], FileCredits]] = {}

    def stamp(self, source: object) -> tuple[int, int, int] | None:
        if not isinstance(source, LedgerSnapshot) or source.clean_close_ts is None:
            return None
        try:
            st = source.path.stat()
        except OSError:
            return None
        return (st.st_size, st.st_mtime_ns, st.st_ino)

    def keep(self, path: Path, stamp: tuple[int, int, int], credits: FileCredits) -> None:
        self.got.pop(path, None)
        while len(self.got) >= self.most:
            del self.got[next(iter(self.got))]  # the one kept longest ago
        self.got[path] = (stamp, credits)


class _Reader:
    """One read's credits per file and window, by the chosen labels, memoised; a closed file's
    whole-life credits from ``closed`` where it is unchanged."""

    def __init__(
        self, ledgers: LedgerSet, labels: Sequence[str], closed: ClosedFiles | None
    ) -> None:
        self.ledgers = ledgers
        self.keep = {_PLACE[name] for name in labels}
        self.closed = closed
        self.memo: dict[tuple[int, int], FileCredits] = {}

    def credits(self, source: Source, w: Window, *, whole: bool) -> FileCredits:
        """``source``'s credits over ``w`` (``whole``: ``w`` holds all of it)."""
        key = (id(source), w.start_ts)
        got = self.memo.get(key)
        if got is not None:
            return got
        stamp = self.closed.stamp(source) if whole and self.closed is not None else None
        if stamp is not None and self.closed is not None and isinstance(source, LedgerSnapshot):
            hit = self.closed.got.get(source.path)
            if hit is not None and hit[0] == stamp:
                self.memo[key] = hit[1]
                return hit[1]
        got = projected(self.ledgers.credits([source], w), self.keep)
        closed, snap = self.closed, source if isinstance(source, LedgerSnapshot) else None
        if stamp is not None and closed is not None and snap is not None and snap.ok:
            closed.keep(snap.path, stamp, got)  # read and checked in full
        self.memo[key] = got
        return got


def attribution_sighting(
    ledgers: LedgerSet,
    report: Report,
    labels: Sequence[str],
    seen: Sighting,
    closed: ClosedFiles | None = None,
) -> Sighting:
    """``seen`` (the ledger counters' read of the same files) with each readable file's counts
    per label set; a file whose credits cannot be read now is unreadable here."""
    total = report.window("total")
    w = Window(total.name, total.start_ts, total.cutoff_ts)
    snaps = {(s.run_id, s.writer_rank, s.generation): s for s in ledgers.snapshots if s.ok}
    reader = _Reader(ledgers, labels, closed)
    files: list[FileCounts] = []
    unreadable = set(seen.unreadable_files)
    for f in seen.files:
        key = (f.run_id, f.writer_rank, f.generation)
        snap = snaps.get(key)
        credits = reader.credits(snap, w, whole=True) if snap is not None else FileCredits()
        if snap is None or not snap.ok:  # gone, or its credits failed the checks just now
            unreadable.add(key)
            continue
        sums = Sums()
        for by_engine in ledgers.sums(snap, w).values():
            sums.add(by_engine)
        own = dataclasses.replace(total, **report_figures(sums))
        parts = file_parts(own, credits, labels)
        files.append(dataclasses.replace(f, counts=(0,) * WIDTH, parts=parts))
    return dataclasses.replace(seen, files=files, unreadable_files=frozenset(unreadable))


# ---- window figures by each label ------------------------------------------------------------


def whose_windows(
    ledgers: LedgerSet,
    report: Report,
    labels: Sequence[str],
    closed: ClosedFiles | None = None,
) -> dict[str, tuple[WhoseWindow, ...]]:
    """Per chosen label, the report's windows as ``report --by LABEL`` shows them.

    A file whose first second is inside a window holds the same credits in it as in the
    ``total`` window (both end at the report's cutoff): it is read once, for ``total``; one
    whose writer's last commit came before the window starts holds none in it: not read. Each
    file's credits are kept by the chosen labels only (the rows by one label and the reasons
    are the same, over far fewer label sets when users are many)."""
    out: dict[str, list[WhoseWindow]] = {name: [] for name in labels}
    sources = ledgers.sources()
    whole = report.window("total")
    total = Window(whole.name, whole.start_ts, whole.cutoff_ts)
    reader = _Reader(ledgers, labels, closed)
    for w in report.windows:
        window = Window(w.name, w.start_ts, w.cutoff_ts)
        credits = FileCredits()
        for source in sources:
            first = last = None
            if isinstance(source, LedgerSnapshot):
                first, last = source.first_bucket_ts, source.last_proof_ts
            if last is not None and last < w.start_ts:
                continue
            inside = first is not None and w.start_ts <= first and w.cutoff_ts == total.cutoff_ts
            credits.add(reader.credits(source, total if inside else window, whole=inside))
        for name in labels:
            by: By = name  # type: ignore[assignment]  # ATTRIBUTION_LABELS are whose's keys
            out[name].append(whose(w, credits, by))
    return {name: tuple(ws) for name, ws in out.items()}


def projected(credits: FileCredits, keep: set[int]) -> FileCredits:
    """``credits`` with the labels at places not in ``keep`` emptied (the reason kept)."""
    out = FileCredits(folded=dict(credits.folded), files=credits.files, without=credits.without)
    k, a, u, t = (i in keep for i in range(4))
    for (key, adapter, user, tenant, reason), c in credits.by_label.items():
        label = (key if k else "", adapter if a else "", user if u else "", tenant if t else "",
                 reason)  # fmt: skip
        got = out.by_label.get(label)
        if got is None:
            out.by_label[label] = Credited(
                c.input_tokens, c.output_tokens, c.cached_tokens, c.requests, c.events
            )
        else:
            got.add(c)
    return out


__all__ = [
    "CREDITED",
    "FAULT",
    "MAX_CLOSED_FILES",
    "NOT_ATTRIBUTED",
    "WIDTH",
    "ClosedFiles",
    "attribution_sighting",
    "file_parts",
    "projected",
    "whose_windows",
]
