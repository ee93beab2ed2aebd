"""A fleet's whose tokens: ``fleet --by key`` (``adapter``, ``user``, ``tenant``), each host's
rows by that label from its exporter, summed across hosts, and what is not attributed.

Each host's rows are its exporter's window gauges by the label
(``vllm_ledger_window_attributed_*{by="key"}``: the rows ``report --by key`` prints on that
host) and its not-attributed row by reason (``vllm_ledger_window_not_attributed_*``), the
latest sample of each, read at the same instant as the fleet's own figures. A key's row is the
sum of its rows on the counted hosts (``ok`` and ``stale``, as the fleet counts them).

The fleet's checks hold here too:

- every value passes the value gate (``read/values.py``): a count is whole, from 0 to the
  largest a ledger holds; the ``aborted`` rest alone may be negative (a request begun before
  the window and credited in it), bounded the same; a refused value is named and not summed;
- each series is taken once (``plan/fleet_copies.py``): copies differing only in ``job`` or a
  replica label, and one exporter under two ``instance`` spellings (the fleet's ``spellings``),
  count once; copies that disagree are a conflict, named and not summed;
- hosts that are missing or failing are not counted: the fleet names them;
- on each counted host, its rows and its not-attributed row must add up to its own window
  figures exactly (both come from one read of its exporter). Where they do not (a refused or
  conflicting series, an exporter from before whose tokens, one whose
  ``--attribution-labels`` leaves the label out), the difference is counted under the reason
  ``not served`` and the host is named, so the fleet's rows and not-attributed row always add
  up to the fleet's own total exactly.

A window is complete when the fleet's is and no host is named here for it. Values ``(none)`` and
``other`` are the exporter's own (docs/observability.md#whose-tokens); an exporter serves at most
``--attribution-series`` values per window, the rest summed as ``other`` on that host, so a key
one host names and another folds is exact only where every host names it.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vllm_ledger import names
from vllm_ledger.errors import BadValues
from vllm_ledger.plan.fleet import LOOKBACK_S, STALE_AFTER_S, Fleet, shown_value
from vllm_ledger.plan.fleet_checks import Refused
from vllm_ledger.plan.fleet_copies import Conflict, Sample, host_of, series_text, take_once
from vllm_ledger.plan.fleet_partial import with_said
from vllm_ledger.plan.fleet_read import read_fleet
from vllm_ledger.plan.fleet_sums import Figures
from vllm_ledger.plan.prom import Fetch, Said, http_get, vector_answer
from vllm_ledger.read import values
from vllm_ledger.read.windows import WINDOW_NAMES

WHOSE_BY: tuple[str, ...] = names.ATTRIBUTION_LABELS
TOKEN_FIGURES: tuple[str, ...] = ("input_tokens", "output_tokens", "cached_tokens", "requests")
ROW_PREFIX = names.EXPORTER_PREFIX + "_window_attributed_"
REST_PREFIX = names.EXPORTER_PREFIX + "_window_not_attributed_"
NOT_SERVED = "not served"  # a counted host's figures its rows and reasons do not hold
REASONS: tuple[str, ...] = (*names.NOT_ATTRIBUTED_REASONS, NOT_SERVED)
MAX_VALUE_CHARS = 256  # a label value longer than any the exporter serves is refused


@dataclass
class Tokens:
    """One window's tokens and finished requests (a row's, a reason's, a sum)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    requests: int = 0

    def add(self, other: Tokens, sign: int = 1) -> None:
        for name in TOKEN_FIGURES:
            setattr(self, name, getattr(self, name) + sign * getattr(other, name))

    def put(self, name: str, value: float) -> None:
        setattr(self, name, getattr(self, name) + round(value))

    def any(self) -> bool:
        return any(getattr(self, name) for name in TOKEN_FIGURES)


def _windows() -> dict[str, Tokens]:
    return {w: Tokens() for w in WINDOW_NAMES}


def of_figures(f: Figures) -> Tokens:
    return Tokens(f.input_tokens, f.output_tokens, f.cached_tokens, f.requests)


@dataclass(frozen=True)
class WhoseRow:
    value: str  # the label's value as the exporters serve it (``(none)``, ``other`` too)
    windows: dict[str, Tokens]
    hosts: tuple[str, ...]  # the counted hosts with a row of it


@dataclass(frozen=True)
class FleetWhose:
    """The fleet's rows by ``by``, most input (total window) first, and what no row holds."""

    by: str
    rows: tuple[WhoseRow, ...]
    not_attributed: dict[str, dict[str, Tokens]]  # reason -> window -> tokens
    requests_aborted: dict[str, int]  # window -> requests that ended without finishing
    complete: dict[str, bool]
    incomplete: tuple[str, ...]  # one line per host and reason, as the fleet's
    duplicates: int = 0
    conflicts: tuple[Conflict, ...] = ()
    refused: tuple[Refused, ...] = ()

    def not_attributed_total(self, window: str) -> Tokens:
        out = Tokens()
        for by_window in self.not_attributed.values():
            out.add(by_window[window])
        return out


@dataclass
class _Host:
    """One host's rows and reasons, as its exporter serves them."""

    rows: dict[str, dict[str, Tokens]] = field(default_factory=dict)
    reasons: dict[str, dict[str, Tokens]] = field(default_factory=dict)
    aborted: dict[str, int] = field(default_factory=dict)
    served_rows: bool = False
    served_rest: bool = False
    short: set[str] = field(default_factory=set)  # windows a refused or conflicting series cut


def check_whose_sample(name: str, labels: dict[str, str], value: float) -> float:
    """One whose-tokens value through the value gate: a whole count; the ``aborted`` rest may
    be negative, within the same bound."""
    what = series_text(labels)
    signed = name.startswith(REST_PREFIX) and labels.get(names.REASON_LABEL) == "aborted"
    if signed and type(value) in (int, float) and math.isfinite(value) and value < 0:
        return -values.check_number(what, -value, most=values.MAX_COUNT, whole=True)
    return values.check_number(what, value, most=values.MAX_COUNT, whole=True)


def _read(
    unique: Sequence[Sample], by: str, counted: set[str], refused: list[Refused]
) -> dict[str, _Host]:
    hosts: dict[str, _Host] = {}
    for labels, raw in unique:
        hk = host_of(labels)
        if hk not in counted:
            continue  # missing or failing: the fleet names it, nothing of it is summed
        h = hosts.setdefault(hk, _Host())
        metric = labels.get("__name__", "")
        window = labels.get(names.WINDOW_LABEL, "")
        if window not in WINDOW_NAMES:
            continue
        is_row = metric.startswith(ROW_PREFIX)
        if is_row and labels.get(names.BY_LABEL) != by:
            continue  # a row by another label: not asked for
        value_label = labels.get(by) if is_row else None
        try:
            value = check_whose_sample(metric, labels, raw)
            if is_row and (value_label is None or len(value_label) > MAX_VALUE_CHARS):
                raise BadValues(f"{series_text(labels)} names no {by} of at most 256 characters")
        except BadValues as exc:
            refused.append(Refused(hk, window, series_text(labels), raw, exc.what))
            h.short.add(window)
            continue
        if is_row:
            h.served_rows = True
            by_window = h.rows.setdefault(str(value_label), _windows())
            by_window[window].put(metric.removeprefix(ROW_PREFIX), value)
        elif metric == names.LEDGER_WINDOW_REQUESTS_ABORTED:
            h.served_rest = True
            h.aborted[window] = h.aborted.get(window, 0) + round(value)
        else:
            h.served_rest = True
            reason = labels.get(names.REASON_LABEL, "")
            if reason in names.NOT_ATTRIBUTED_REASONS:
                by_window = h.reasons.setdefault(reason, _windows())
                by_window[window].put(metric.removeprefix(REST_PREFIX), value)
    return hosts


def build_fleet_whose(fleet: Fleet, samples: Sequence[Sample], by: str) -> FleetWhose:
    """The rows by ``by`` of ``fleet``'s counted hosts from ``samples`` (the rows' and the rest's
    window gauges, asked at the fleet's instant). Pure."""
    exporters = {(s.host, i): s.instances[0] for s in fleet.spellings for i in s.instances}
    unique, duplicates, _differ, conflicts = take_once(samples, exporters)
    counted = {h.name for h in fleet.hosts if h.counted}
    refused: list[Refused] = []
    read = _read(unique, by, counted, refused)
    for c in conflicts:
        if c.host in read:
            read[c.host].short.update([c.window] if c.window else WINDOW_NAMES)
    rows: dict[str, dict[str, Tokens]] = {}
    row_hosts: dict[str, set[str]] = {}
    reasons = {r: _windows() for r in REASONS}
    aborted = dict.fromkeys(WINDOW_NAMES, 0)
    lines: list[str] = []
    named: dict[str, set[str]] = {}  # host -> windows it is named for
    for h in fleet.hosts:
        if not h.counted:
            continue
        got = read.get(h.name, _Host())
        for value, by_window in got.rows.items():
            mine = rows.setdefault(value, _windows())
            row_hosts.setdefault(value, set()).add(h.name)
            for w in WINDOW_NAMES:
                mine[w].add(by_window[w])
        for reason, by_window in got.reasons.items():
            for w in WINDOW_NAMES:
                reasons[reason][w].add(by_window[w])
        for w, n in got.aborted.items():
            aborted[w] += n
        unheld = _unheld(h.windows, got)
        for w, t in unheld.items():
            reasons[NOT_SERVED][w].add(t)
        off = sorted((w for w in WINDOW_NAMES if unheld[w].any() or w in got.short),
                     key=WINDOW_NAMES.index)  # fmt: skip
        if off:
            named[h.name] = set(off)
            lines.append(f"{h.name}: {_why(got, by, off)}")
    lines.extend(
        f"{c.host}: conflict: {c.series} is {' and '.join(shown_value(v) for v in c.values)}: "
        "not counted"
        for c in conflicts
        if c.host in counted
    )
    lines.extend(f"{r.host}: refused {r.why}: not counted" for r in refused)
    order = sorted(rows, key=lambda v: (-rows[v]["total"].input_tokens, v))
    return FleetWhose(
        by=by,
        rows=tuple(WhoseRow(v, rows[v], tuple(sorted(row_hosts[v]))) for v in order),
        not_attributed=reasons,
        requests_aborted=aborted,
        complete={
            w: fleet.complete[w] and not any(w in ws for ws in named.values()) for w in WINDOW_NAMES
        },
        incomplete=tuple(lines),
        duplicates=duplicates,
        conflicts=tuple(c for c in conflicts if c.host in counted),
        refused=tuple(refused),
    )


def _unheld(windows: dict[str, Figures], got: _Host) -> dict[str, Tokens]:
    """Per window, the host's own figures less what its rows and reasons hold."""
    out = {}
    for w in WINDOW_NAMES:
        t = of_figures(windows[w])
        for by_window in (*got.rows.values(), *got.reasons.values()):
            t.add(by_window[w], sign=-1)
        out[w] = t
    return out


def _why(got: _Host, by: str, windows: Sequence[str]) -> str:
    where = ", ".join(windows)
    if not got.served_rest:
        return (
            f"serves no whose-tokens series (an exporter from before them): its tokens are "
            f"'{NOT_SERVED}' in {where}"
        )
    if not got.served_rows:
        return (
            f"serves no rows by {by} (its exporter's --attribution-labels leaves {by} out): "
            f"its credited tokens are '{NOT_SERVED}' in {where}"
        )
    return f"its rows by {by} and its not-attributed row do not add up to its figures in {where}"


# ---- the queries -----------------------------------------------------------------------------


def whose_queries(by: str, job: str | None = None) -> dict[str, str]:
    """The instant queries: the rows by ``by`` and the not-attributed row (``job`` as
    ``--job``)."""
    figs = "|".join(TOKEN_FIGURES)
    scoped = [f"job={json.dumps(job)}"] if job is not None else []
    rows = [f'__name__=~"{ROW_PREFIX}({figs})"', f"{names.BY_LABEL}={json.dumps(by)}", *scoped]
    rest = [
        f'__name__=~"({REST_PREFIX}({figs})|{names.LEDGER_WINDOW_REQUESTS_ABORTED})"',
        *scoped,
    ]
    return {"rows": "{" + ",".join(rows) + "}", "rest": "{" + ",".join(rest) + "}"}


def read_fleet_whose(
    base_url: str,
    by: str,
    *,
    job: str | None = None,
    stale_after_s: float = STALE_AFTER_S,
    lookback_s: float = LOOKBACK_S,
    clock: Any = None,
    fetch: Fetch = http_get,
) -> tuple[Fleet, FleetWhose]:
    """The fleet (``read_fleet``) and its rows by ``by``, all asked at one instant. An answer
    the store called partial, or gave a warning with, leaves no window complete (``with_said``,
    as the fleet's own answers)."""
    at = (clock or time.time)()
    fleet = read_fleet(
        base_url,
        job=job,
        stale_after_s=stale_after_s,
        lookback_s=lookback_s,
        clock=lambda: at,
        fetch=fetch,
    )
    samples: list[Sample] = []
    said: dict[str, Said] = {}
    for name, expr in whose_queries(by, job).items():
        series, said[name] = vector_answer(base_url, expr, at, fetch, keep_nan=True)
        samples += series
    fleet = with_said(fleet, said)
    return fleet, build_fleet_whose(fleet, samples, by)


__all__ = [
    "NOT_SERVED",
    "REASONS",
    "WHOSE_BY",
    "FleetWhose",
    "Tokens",
    "WhoseRow",
    "build_fleet_whose",
    "check_whose_sample",
    "read_fleet_whose",
    "whose_queries",
]
