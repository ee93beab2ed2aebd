"""Whose tokens in a window: the credited rows by key, adapter, user or tenant, and one row of
what is not attributed, with its reasons apart, adding up to the window's figures exactly.

Pure: it takes a window's report (the ledger's own figures, ``report.WindowReport``) and what
the files credited over the same window (``LedgerSet.credits``), and returns plain dataclasses
for the renderers.

The rows credit each finished request at its finish second to its labels (``write/tags.py``).
What no row holds is **not attributed**, and says why:

* ``untagged``: finished requests no tag named (a route the middleware does not see, a vLLM
  without it, a file written before attribution);
* ``ambiguous``: finished requests whose id two requests held at once (a client's own
  ``X-Request-Id`` reused while the first was in flight);
* ``copies``: the prompt of each further copy of ``n > 1`` sampling, which the engine prefills
  again and the client's ``usage`` counts once;
* ``aborted``: the rest of the window's figures: tokens of requests that ended without
  finishing (a client that cut a stream, a disconnect), of requests still running at the
  window's end, minus tokens credited here of requests that had begun before its start (so it
  may be negative at a window's start), and prefill recomputed after a preemption;
  ``requests_aborted`` counts the requests that ended without finishing;
* ``fault``: requests the middleware could not tag because of a fault of its own (counted).

Requests answered 429 over a hard budget (docs/budgets.md) never reached the engine: they
hold no tokens, and are counted on their row as ``requests_refused``.

A file written before attribution credits nobody: its tokens are in ``aborted``'s rest, and
``files_without`` says how many such files the window reads.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from vllm_ledger.read.attribution import ByValue, Credited, FileCredits, Label
from vllm_ledger.read.report import WindowReport

By = Literal["key", "adapter", "user", "tenant"]
BY_KEYS: tuple[By, ...] = ("key", "adapter", "user", "tenant")
_PLACE: dict[By, int] = {"key": 0, "adapter": 1, "user": 2, "tenant": 3}
STORED_REASONS = ("untagged", "ambiguous", "copies")  # reasons with tokens of their own
NOT_ATTRIBUTED = "not attributed"


class WhoseRow(NamedTuple):
    """One key (adapter, user, tenant): what was credited to it in the window. ``value`` ""
    is requests that named none (no bearer key, no user, ...); ``other``, the names folded
    past the per-hour bound. (A named tuple: a view by user makes tens of thousands.)"""

    value: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    requests: int
    requests_aborted: int = 0  # its requests that ended without finishing (tokens: not here)
    requests_refused: int = 0  # answered 429 over a hard budget (no tokens)


@dataclass(frozen=True)
class NotAttributed:
    """The window's figures no row holds, by reason (``reasons``: name -> figures), and the
    events counted beside them."""

    input_tokens: int
    output_tokens: int
    cached_tokens: int
    requests: int
    reasons: Mapping[str, Credited] = field(default_factory=dict)
    requests_aborted: int = 0
    faults: int = 0
    requests_refused: int = 0


@dataclass(frozen=True)
class WhoseWindow:
    """One window: its rows (most input first), what is not attributed, and how sure."""

    name: str
    start_ts: int
    cutoff_ts: int
    by: By
    rows: tuple[WhoseRow, ...]
    not_attributed: NotAttributed
    total: WindowReport  # the window's own figures and coverage (``report``)
    folded: int = 0  # distinct values of ``by`` folded into ``other`` (summed per file-hour)
    files_without: int = 0  # files read that were written before attribution
    more: int = 0  # values past ``top``: credited, not listed (their sums: the rest)

    @property
    def complete(self) -> bool:
        """The window is complete and every file it read keeps attribution."""
        return self.total.complete and self.files_without == 0


def whose(
    window: WindowReport,
    credits: FileCredits,
    by: By,
    top: int = 0,
    narrower: WhoseWindow | None = None,
) -> WhoseWindow:
    """The window's rows by ``by`` and its not-attributed row; the two add up to the window's
    input, output, cached tokens and finished requests exactly. ``top`` (0: all): only the
    first rows are made, the others counted in ``more`` (a table of twenty out of 24,000).
    ``narrower``: the view by ``by`` and ``top`` of the read ``credits`` was widened from
    (``FileCredits.widened_from``), where the caller made it: the first rows are then sought
    among its rows and the values the ring or an aborted or refused request names."""
    values = credits.values(_PLACE[by])  # reason -> value -> sums; read here, never changed
    credited_rows = values.get("", {})
    reasons: dict[str, Credited] = {r: Credited() for r in STORED_REASONS}
    for reason, into in reasons.items():
        for counts in values.get(reason, {}).values():
            into.add_counts(*counts)
    aborted_by_value = {v: c[4] for v, c in values.get("aborted", {}).items()}
    refused_by_value = {v: c[4] for v, c in values.get("refused", {}).items()}
    requests_aborted = sum(aborted_by_value.values())
    refused = sum(refused_by_value.values())
    faults = sum(c[4] for c in values.get("fault", {}).values())
    credited = Credited(*_credited_sums(credits, values))
    for c in reasons.values():
        credited.add(c)
    rest = Credited(
        input_tokens=window.input_tokens - credited.input_tokens,
        output_tokens=window.output_tokens - credited.output_tokens,
        cached_tokens=window.cached_tokens - credited.cached_tokens,
        requests=window.requests - credited.requests,
        events=requests_aborted,
    )
    reasons["aborted"] = rest
    outside = Credited()
    for c in reasons.values():
        outside.add(c)
    # A value with only aborted or refused requests has a row too, with no tokens.
    extra = {v: [0, 0, 0, 0] for v in (*aborted_by_value, *refused_by_value)}
    rows = {**extra, **credited_rows} if extra else credited_rows
    aborted_get, refused_get = aborted_by_value.get, refused_by_value.get
    items, more = _first(rows, top, _among(credits, narrower, _PLACE[by], extra, len(rows)))
    out_rows = [
        WhoseRow(v, acc[0], acc[1], acc[2], acc[3], aborted_get(v, 0), refused_get(v, 0))
        for v, acc in items
    ]
    out_rows.sort(key=lambda r: (-r.input_tokens, -r.output_tokens, r.value))
    return WhoseWindow(
        name=window.name,
        start_ts=window.start_ts,
        cutoff_ts=window.cutoff_ts,
        by=by,
        rows=tuple(out_rows),
        not_attributed=NotAttributed(
            input_tokens=outside.input_tokens,
            output_tokens=outside.output_tokens,
            cached_tokens=outside.cached_tokens,
            requests=outside.requests,
            reasons=reasons,
            requests_aborted=requests_aborted,
            faults=faults,
            requests_refused=refused,
        ),
        total=window,
        folded=credits.folded.get(by, 0) if by != "adapter" else 0,
        files_without=credits.without,
        more=more,
    )


def _credited_sums(credits: FileCredits, values: ByValue) -> list[int]:
    """The credited rows' input, output, cached tokens and requests added up: the read's own
    sums less the other reasons' lists where it made them, else row by row."""
    known = None if credits.by_label else credits.sums
    if known is None:
        columns = zip(*values.get("", {}).values(), strict=True)
        return [sum(column) for column in columns][:4] or [0, 0, 0, 0]
    out = known[:4]
    for reason, rows in values.items():
        for counts in rows.values() if reason else ():
            for i in range(4):
                out[i] -= counts[i]
    return out


def _among(
    credits: FileCredits,
    narrower: WhoseWindow | None,
    place: int,
    extra: Mapping[str, object],
    rows: int,
) -> set[str] | None:
    """Where a widened read's first rows are: the narrower view's first rows, the values the
    ring credits and those with only aborted or refused requests. Every other value has the
    narrower read's sums, and each of the narrower view's first rows has at least its own (no
    count is negative: ``attr_judge``), so it stays ahead of them. None: look among all
    (``rows`` of them)."""
    if narrower is None or credits.widened_from is None or credits.by_label:
        return None
    ring = credits.widened_from[1].values(place).get("", {})
    if 2 * (len(narrower.rows) + len(ring) + len(extra)) >= rows:
        return None  # not worth a set (``_first``)
    return {*(r.value for r in narrower.rows), *ring, *extra}


def _first(
    rows: Mapping[str, list[int]], top: int, among: set[str] | None = None
) -> tuple[list[tuple[str, list[int]]], int]:
    """The ``top`` rows with the most input (then output, then by name; 0: all), and how many
    are left out; ``among``: values that hold the first ``top`` rows, if known (looked among
    where they are under half of the rows: a walk in the set's order costs more a value)."""
    if not 0 < top < len(rows):
        return list(rows.items()), 0
    if among is None or 2 * len(among) >= len(rows):
        got: Iterable[tuple[str, list[int]]] = rows.items()
    else:
        got = [(v, rows[v]) for v in among if v in rows]
    first = heapq.nsmallest(top, [(-acc[0], -acc[1], v) for v, acc in got])
    return [(v, rows[v]) for _i, _o, v in first], len(rows) - top


def label_value(label: Label, by: By) -> str:
    """The value of ``by`` in a label set."""
    return label[_PLACE[by]]
