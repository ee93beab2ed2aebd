"""Whose tokens, read: one file's credited sums per label set over a window, judged before
they count, and what a set of files credits in a window.

A window is read as the counts are (``snapshot.window_parts``): per-second rows at its edges,
hourly rows next to them, daily rows between. Every value passes the reader's checks (an
integer, not negative, at most ``MAX_COUNT``, cached within prompt, labels short strings, a
reason the writer gives): a file that fails is refused whole (``bad_values``), as for its
counts. A file written before attribution has no tables: it credits nobody, and its tokens
read as not attributed.

The window's own figures stay the ledger's (``report``); what the files credit is held
against them (``read/whose.py``) so the rows add up to the window's total exactly.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from vllm_ledger.errors import BadValues
from vllm_ledger.format import attr_reads
from vllm_ledger.read.attr_judge import (
    MAX_LABEL_CHARS,
    REASONS,
    bad_label,
    judged_columns,
    judged_row,
    short_texts,
)
from vllm_ledger.read.snapshot import LedgerSnapshot, window_parts
from vllm_ledger.read.windows import Window

# (key, adapter, user, tenant, reason): as the writer labels a credit (``write/tags.py``).
Label = tuple[str, str, str, str, str]


@dataclass
class Credited:
    """What a label set was credited: tokens and finished requests, and events (aborted
    requests, middleware faults)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    requests: int = 0
    events: int = 0

    def add(self, other: Credited) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cached_tokens += other.cached_tokens
        self.requests += other.requests
        self.events += other.events

    def counts(self) -> tuple[int, int, int, int, int]:
        return (
            self.input_tokens,
            self.output_tokens,
            self.cached_tokens,
            self.requests,
            self.events,
        )

    def add_counts(self, p: int, g: int, c: int, r: int, e: int) -> None:
        self.input_tokens += p
        self.output_tokens += g
        self.cached_tokens += c
        self.requests += r
        self.events += e


# A read by one label (``file_credits(..., by=...)``): reason -> value of that label ->
# [input, output, cached, requests, events], one list per reason and value.
ByValue = dict[str, dict[str, list[int]]]


def add_by_value(mine: ByValue, other: ByValue) -> None:
    """``other``'s sums added into ``mine`` (lists copied, never shared)."""
    for reason, values in other.items():
        into = mine.get(reason)
        if into is None:
            mine[reason] = {v: counts[:] for v, counts in values.items()}
            continue
        for v, counts in values.items():
            got = into.get(v)
            if got is None:
                into[v] = counts[:]
            else:
                for i, n in enumerate(counts):
                    got[i] += n


@dataclass
class FileCredits:
    """One file's (or many files') credits over a window, and the names folded past the
    bound (kind -> distinct values, summed over the hours). A read of every label set fills
    ``by_label``; a read by one label fills ``by_value`` (``values``: either, by one label)."""

    by_label: dict[Label, Credited] = field(default_factory=dict)
    by_value: ByValue = field(default_factory=dict)
    folded: dict[str, int] = field(default_factory=dict)
    files: int = 0  # files read
    without: int = 0  # files written before attribution: their tokens credit nobody
    # Every list of ``by_value`` added up column by column, where the read made them as it
    # judged its rows (``judged_columns``); None where not known.
    sums: list[int] | None = None
    # (the narrower read, the ring before it) of a widened read (``widened``); None otherwise.
    widened_from: tuple[FileCredits, FileCredits] | None = field(
        default=None, compare=False, repr=False
    )

    def add(self, other: FileCredits) -> None:
        self.widened_from = None
        for label, c in other.by_label.items():
            self.by_label.setdefault(label, Credited()).add(c)
        mine, theirs = self.value_sums(), other.value_sums()
        self.sums = None if mine is None or theirs is None else _plus(mine, theirs)
        add_by_value(self.by_value, other.by_value)
        for kind, n in other.folded.items():
            self.folded[kind] = self.folded.get(kind, 0) + n
        self.files += other.files
        self.without += other.without

    def value_sums(self) -> list[int] | None:
        """``sums``, or zeros for no values; None where not known."""
        return self.sums if self.sums is not None or self.by_value else [0] * 5

    def values(self, place: int) -> ByValue:
        """By the reason and the label at ``place`` (0 key, 1 adapter, 2 user, 3 tenant): the
        read by one label as it is, a read of every label set summed so."""
        if not self.by_label:
            return self.by_value
        out: ByValue = {}
        for label, c in self.by_label.items():
            got = out.setdefault(label[4], {}).setdefault(label[place], [0, 0, 0, 0, 0])
            for i, n in enumerate(c.counts()):
                got[i] += n
        add_by_value(out, self.by_value)
        return out


BY_PLACE = {"key": 0, "adapter": 1, "user": 2, "tenant": 3}


def file_credits(
    snap: LedgerSnapshot,
    conn: sqlite3.Connection,
    w: Window,
    labels: dict[Any, Label] | None = None,
    by: str | None = None,
    folded_end: int | None = None,
) -> FileCredits:
    """``snap``'s credits over ``w``, read on ``conn``; ``BadValues`` when a value fails.
    ``labels``: the file's label sets as read before (a caller's cache for the same read; read
    again where a row names one it lacks: a live writer adds label sets), filled in place.
    ``by`` (key, adapter, user or tenant): summed by that label alone (``by_value``, what a
    view by it needs, one row per value). Every row read is judged before it counts.
    ``folded_end``: the names folded past the bound are counted in the hours before it (the
    window's cutoff by default)."""
    out = FileCredits(files=1)
    if by is not None:
        if not _has_tables(conn):
            out.without = 1
            return out
        _grouped(out, conn, snap, w, by, folded_end)
        return out
    if labels is None or not labels:
        if not _has_tables(conn):
            out.without = 1
            return out
        labels = _fill(labels, conn)
    start, parts = _parts(snap, w)
    for table, a, b in parts:
        for row in _rows(lambda t=table, x=a, y=b: attr_reads.sums(conn, t, x, y), table):
            dim, p, g, c, r, e = judged_row(table, row)
            label = labels.get(dim)
            if label is None:
                label = _fill(labels, conn).get(dim)
            if label is None:
                raise BadValues(f"{table}: a row of label set {dim!r:.20} the file does not name")
            out.by_label.setdefault(label, Credited()).add_counts(p, g, c, r, e)
    _add_folded(out, conn, start, w.cutoff_ts if folded_end is None else folded_end)
    return out


def widened(prev: FileCredits, ring: FileCredits) -> FileCredits:
    """``prev`` (a read by one label) with ``ring`` (the span before it) added, as a new read.
    The lists of values the ring does not name are shared with ``prev``, not copied: a read's
    lists are never changed in place (``FileCredits.add`` changes only lists it made). Per
    reason the larger of the two is copied whole and the smaller walked into the copy."""
    by_value: ByValue = {}
    for reason in {**prev.by_value, **ring.by_value}:
        mine, theirs = prev.by_value.get(reason, {}), ring.by_value.get(reason, {})
        if len(mine) < len(theirs):
            mine, theirs = theirs, mine
        into = by_value[reason] = dict(mine)
        for v, counts in theirs.items():
            got = into.get(v)
            into[v] = counts if got is None else [a + b for a, b in zip(got, counts, strict=True)]
    folded = dict(prev.folded)
    for kind, n in ring.folded.items():
        folded[kind] = folded.get(kind, 0) + n
    inner, outer = prev.value_sums(), ring.value_sums()
    sums = None if inner is None or outer is None else _plus(inner, outer)
    return FileCredits(
        by_value=by_value,
        folded=folded,
        files=prev.files,
        without=prev.without,
        sums=sums,
        widened_from=(prev, ring),
    )


def _plus(a: list[int], b: list[int]) -> list[int]:
    return [x + y for x, y in zip(a, b, strict=True)]


def read_from(snap: LedgerSnapshot, w: Window) -> int:
    """Where a read of ``w`` starts in ``snap``: 0 for a window that starts at or before the
    file's first record (credits of seconds before it count), else the window's start."""
    first = snap.first_bucket_ts
    return 0 if first is not None and w.start_ts <= first else w.start_ts


class CreditReads:
    """A read's credits, file by file: each file's label sets read once (a live writer's new
    ones read when a row names them), and reads by one label widened: a window that holds the
    last one read of the same file, label and cutoff (``24h`` after ``today``, ``3d`` after
    ``24h``) reads only the span before it and adds the two, so each row is read once however
    many windows nest. One read kept per file and label: a stream of windows stays flat."""

    def __init__(self) -> None:
        self._labels: dict[int, dict[Any, Label]] = {}
        self._last: dict[tuple[int, str], tuple[int, int, FileCredits]] = {}

    def read(
        self, snap: LedgerSnapshot, conn: sqlite3.Connection, w: Window, by: str | None
    ) -> FileCredits:
        """``file_credits`` of ``snap`` over ``w`` (``by``: as it), the same numbers."""
        if by is None:
            return file_credits(snap, conn, w, self._labels.setdefault(id(snap), {}))
        start = read_from(snap, w)
        last = self._last.get((id(snap), by))
        if last is None or last[0] != w.cutoff_ts or last[1] < start:
            got = file_credits(snap, conn, w, by=by)
        elif last[1] == start:
            return last[2]
        else:
            inner, prev = last[1], last[2]
            ring = file_credits(snap, conn, Window(w.name, start, inner), by=by,
                                folded_end=inner - inner % 3600)  # fmt: skip
            got = widened(prev, ring)
        self._last[(id(snap), by)] = (w.cutoff_ts, start, got)
        return got


def _parts(snap: LedgerSnapshot, w: Window) -> tuple[int, list[tuple[str, int, int]]]:
    start = read_from(snap, w)
    seconds, hours, days = window_parts(start, w.cutoff_ts, daily=True)
    return start, [
        *(("attr_seconds", a, b) for a, b in seconds),
        *(("attr_hourly", a, b) for a, b in hours),
        *([("attr_daily", *days)] if days is not None else []),
    ]


_NONE_YET = object()  # no row read yet


def _grouped(
    out: FileCredits,
    conn: sqlite3.Connection,
    snap: LedgerSnapshot,
    w: Window,
    by: str,
    folded_end: int | None,
) -> None:
    """The credits summed by ``by`` and the reason into ``out.by_value``: each part's rows read
    with their label, judged as they came (``judged_columns``: each row as ``judged_row`` judges
    one, and the column totals, which bound every sum), then summed here, one list per value
    and reason; each value and reason judged once."""
    start, parts = _parts(snap, w)
    acc = out.by_value
    totals = [0] * 5
    last: Any = _NONE_YET  # the reason of the row before and its values: most rows share one
    into: dict[str, list[int]] = {}
    for table, a, b in parts:
        columns = _columns(conn, table, by, a, b)
        judged_columns(table, columns[2:], totals)
        for value, reason, p, g, c, r, e in zip(*columns, strict=True):
            if reason is not last:
                got_reason = acc.get(reason)
                into = acc[reason] = {} if got_reason is None else got_reason
                last = reason
            got = into.get(value)
            if got is None:
                into[value] = [p, g, c, r, e]
            else:
                got[0] += p
                got[1] += g
                got[2] += c
                got[3] += r
                got[4] += e
    for reason, values in acc.items():
        if reason not in REASONS:
            bad_label(by, next(iter(values)), reason)
        if short_texts(values):
            continue
        for value in values:
            if type(value) is not str or len(value) > MAX_LABEL_CHARS:
                bad_label(by, value, reason)
    out.sums = totals
    _add_folded(out, conn, start, w.cutoff_ts if folded_end is None else folded_end)


def _columns(conn: sqlite3.Connection, table: str, by: str, a: int, b: int) -> list[Sequence[Any]]:
    """A span's labelled rows a column at a time: (value, reason, *ATTR_COLUMNS)."""
    got = attr_reads.labelled_columns(conn, table, by, a, b)
    if got is not None:
        return list(got)
    rows = _rows(lambda: attr_reads.labelled_rows(conn, table, by, a, b), table)
    return list(zip(*rows, strict=True)) if rows else [()] * 7


def _add_folded(out: FileCredits, conn: sqlite3.Connection, start: int, end: int) -> None:
    hour = start - start % 3600
    for kind, n, non_int, lowest in attr_reads.folded(conn, hour, end):
        if non_int or (lowest is not None and lowest < 0) or type(n) is not int:
            raise BadValues("attr_folded: a count that is not a whole number")
        if kind in ("key", "user", "tenant"):
            out.folded[kind] = out.folded.get(kind, 0) + n


def _rows(query: Any, table: str) -> list[tuple[Any, ...]]:
    """A query's rows; a sum past 2^63 (values no engine makes) is ``BadValues``."""
    try:
        rows: list[tuple[Any, ...]] = query()
    except sqlite3.OperationalError as exc:
        if "integer overflow" in str(exc):
            raise BadValues(
                f"{table}: counts overflow a 64-bit sum, more than any ledger holds"
            ) from exc
        raise
    return rows


def _fill(labels: dict[Any, Label] | None, conn: sqlite3.Connection) -> dict[Any, Label]:
    out = labels if labels is not None else {}
    out.update(_labels(conn))
    return out


def _has_tables(conn: sqlite3.Connection) -> bool:
    names = frozenset(r[0] for r in conn.execute("SELECT name FROM sqlite_master"))
    return attr_reads.has_attribution(names)


def _labels(conn: sqlite3.Connection) -> dict[Any, Label]:
    out: dict[Any, Label] = {}
    for row in attr_reads.dims(conn):
        dim, *texts = row
        if type(dim) is not int or not all(
            type(t) is str and len(t) <= MAX_LABEL_CHARS for t in texts
        ):
            raise BadValues(f"attr_dims: label set {str(row)[:60]!r} is not short texts")
        if texts[4] not in REASONS:
            raise BadValues(f"attr_dims: {texts[4][:40]!r} is not a reason the writer gives")
        out[dim] = (texts[0], texts[1], texts[2], texts[3], texts[4])
    return out


def merged(parts: Iterable[FileCredits]) -> FileCredits:
    out = FileCredits()
    for part in parts:
        out.add(part)
    return out


__all__ = [
    "REASONS",
    "CreditReads",
    "Credited",
    "FileCredits",
    "Label",
    "file_credits",
    "merged",
]
