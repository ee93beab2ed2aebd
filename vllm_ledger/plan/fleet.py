"""A fleet: many hosts, each running ``vllm-ledger exporter``, read back from one Prometheus (or
a Prometheus-compatible store: VictoriaMetrics, Thanos, Mimir; the same queries).

Each host's figures are its exporter's own window gauges, the latest sample of each
(``vllm_ledger_window_*``), never ``increase()`` over scrape edges: a window's figure is then
exactly what ``vllm-ledger report`` says on that host, and the fleet's is their sum. A host is
the exporter's scrape target: the ``host`` label where relabelling adds one, else Prometheus's
``instance`` (``host_of``).

Every host is accounted for. Hosts are known from three sources (``plan/fleet_targets.py``):
the ledger series (now or within ``lookback_s``), ``up`` (now or within ``lookback_s``) and the
store's targets API, the last two for the jobs that serve ledger series (``--job``, or every job
that did within ``plan.fleet_read.JOBS_HISTORY_S``). A host is

- ``ok``: its newest sample is at most ``stale_after_s`` old and its exporter read its ledgers;
- ``stale``: its newest sample is older than that (Prometheus stopped scraping it, remote write
  lags); its figures still count, but nothing it says is complete;
- ``missing``: a target of it is down (``up == 0``; the targets API not ``up``), or it had
  ``up`` within ``lookback_s`` and has none now, or it had series within ``lookback_s`` and has
  none now (its series stopped). Its figures are not in the sum, whether or not its ledger
  series are still there. One with no sample now while its target is up, or whose samples are
  all stamped ahead of now, carries the hint ``clock ahead?``: Prometheus hides a sample
  stamped after the query's instant, so a host whose clock runs ahead has no series "now"
  until real time passes its first stamp;
- ``failing``: its exporter answers but cannot read its ledgers (``vllm_ledger_report_ok 0``).

Each series is counted once. Copies of a series that differ only in labels that are not the
ledger's own (``job``, ``replica``, ``prometheus_replica``: one exporter scraped by two jobs,
HA replicas in a store that does not deduplicate) are one series (``plan/fleet_copies.py``),
and so are the copies of one exporter seen under two ``instance`` spellings of one host (the
same ``ledger_instance`` values: a ``Spelling``, named in a note): identical values are taken
once (``Fleet.duplicates``), differing values are a ``Conflict``, named and never summed.
Every value passes the project's value gate (``read/values.py``, in ``plan/fleet_checks.py``):
a negative, non-finite, fractional count or absurd figure is ``Refused`` and not summed; a
sample stamped more than ``AHEAD_TOLERANCE_S`` after the query's instant names that host's clock
as ahead. What passes is summed per host, per model and per instance (``plan/fleet_sums.py``).

A window of the fleet is complete only when every host is ``ok`` and complete in that window
(its whole-root coverage series, without ``ledger_instance``) with no conflict, refused value or
clock ahead; otherwise ``incomplete`` names each host and why. A model's window is complete
when every host instance serving it is. None is from an answer the store called partial or
gave a warning with (``plan/fleet_partial.py``: series or copies of them may be missing).

``plan.fleet_read.read_fleet`` asks six instant queries (``plan.prom.vector_answer``: labels
and values, through ``plan.prom.http_get``), the jobs that serve ledger series
(``plan.prom.label_values_answer``) and the targets (``plan.prom.targets_answer``), each with
what the store said of it (``plan/fleet_partial.py``); ``build_fleet`` is pure;
``formats/fleet.py`` renders its text and JSON forms. docs/fleet.md says how hosts are found
and what each line means.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from vllm_ledger import names
from vllm_ledger.plan.fleet_checks import Refused, clock_ahead
from vllm_ledger.plan.fleet_copies import (
    Conflict,
    Sample,
    Spelling,
    host_of,
    one_exporter,
    take_once,
)
from vllm_ledger.plan.fleet_sums import Coverage, Figures, Served, empty_windows
from vllm_ledger.plan.fleet_targets import Found, Known, LedgerTargets
from vllm_ledger.plan.prom import Said, Target
from vllm_ledger.read.windows import WINDOW_NAMES  # the windows each exporter serves
from vllm_ledger.units import format_duration

HostState = Literal["ok", "stale", "missing", "failing"]
HOST_STATES: tuple[HostState, ...] = ("ok", "stale", "missing", "failing")
STALE_AFTER_S = names.EXPORTER_SAMPLE_STALE_AFTER_S
LOOKBACK_S = 3600.0
# Where a host has no sample now while its target is up, or only samples stamped ahead: its
# clock may be ahead (Prometheus hides a sample stamped after the query's instant).
CLOCK_AHEAD_HINT = "clock ahead?"
AHEAD_DOC = "docs/fleet.md#a-clock-ahead"


@dataclass(frozen=True)
class Host:
    name: str
    state: HostState
    why: str  # "" when ok
    newest_ts: float | None  # its newest sample (vllm_ledger_report_ok)
    windows: dict[str, Figures]
    coverage: dict[str, Coverage]
    instances: tuple[str, ...]  # the ledger_instance values it serves
    found: tuple[Found, ...] = ("series",)  # where it was found: series, up, targets
    # Per window: ok, covered, and no conflict, refused value or clock ahead in it.
    complete: dict[str, bool] = field(default_factory=dict)
    clock_ahead_s: float | None = None  # how far its newest sample is after the query's instant
    # ``CLOCK_AHEAD_HINT`` where it has no sample now while its target is up or its samples are
    # stamped ahead (a clock ahead hides them until it is passed), else "".
    hint: str = ""

    @property
    def counted(self) -> bool:
        """Whether its figures are in the fleet's sums (ok, stale)."""
        return self.state in ("ok", "stale")


@dataclass(frozen=True)
class ModelRow:
    name: str
    windows: dict[str, Figures]
    complete: dict[str, bool]
    hosts: tuple[str, ...]


@dataclass(frozen=True)
class Fleet:
    source: str
    at_ts: float
    stale_after_s: float
    lookback_s: float
    hosts: tuple[Host, ...]
    models: tuple[ModelRow, ...]
    total: dict[str, Figures]
    complete: dict[str, bool]
    incomplete: tuple[str, ...]  # one line per reason a window is not complete, host first
    duplicates: int = 0  # series seen more than once with one value, each taken once
    duplicate_labels: tuple[str, ...] = ()  # the labels those copies differ in
    conflicts: tuple[Conflict, ...] = ()
    refused: tuple[Refused, ...] = ()
    notes: tuple[str, ...] = ()  # what was not read, targets that are not hosts, spellings
    spellings: tuple[Spelling, ...] = ()  # exporters seen under several instance values
    said: dict[str, Said] = field(default_factory=dict)  # answers the store called partial

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(h.name for h in self.hosts if h.state == "missing")


def build_fleet(
    windows: Sequence[Sample],
    newest: Sequence[Sample],
    up: Sequence[Sample],
    seen: Sequence[Sample],
    *,
    source: str,
    at_ts: float,
    stale_after_s: float = STALE_AFTER_S,
    lookback_s: float = LOOKBACK_S,
    up_seen: Sequence[Sample] = (),
    ahead: Sequence[Sample] = (),
    scrape_targets: Sequence[Target] | None = None,
    jobs: Sequence[str] | None = None,
    job: str | None = None,
    notes: Sequence[str] = (),
) -> Fleet:
    """The fleet from the instant queries at ``at_ts`` (``read_fleet`` asks them):

    - ``windows``: ``{__name__=~"vllm_ledger_(window_...|report_ok)"}``, the latest samples;
    - ``newest``: ``timestamp(vllm_ledger_report_ok)``, each host's newest sample time;
    - ``up``: ``up``, to tell a target that is down; ``up_seen``: ``max_over_time(up[lookback])``;
    - ``seen``: ``max_over_time(vllm_ledger_report_ok[lookback])``, every host of the lookback;
    - ``ahead``: ``timestamp(vllm_ledger_report_ok)`` asked ``fleet_read.AHEAD_S`` after ``at_ts``;

    and ``scrape_targets`` (``/api/v1/targets``; None: not read) and ``jobs`` (the jobs that
    served ledger series; None: not read), both for the jobs ``job`` (``--job``) or ``jobs``
    and the ledger series name.
    """
    known = Known.of(job, jobs)
    for labels, _value in [*seen, *newest, *ahead, *windows]:
        known.add(labels, "series")
    ahead_by_host = clock_ahead(ahead, at_ts)
    exporters, spellings = one_exporter(windows)
    unique, duplicates, differ_in, conflicts = take_once(windows, exporters)
    served = Served.of(unique, conflicts)
    ledger_targets = LedgerTargets.of(up, up_seen, scrape_targets, known)
    idle = ledger_targets.admit(known)
    newest_ts = _newest_times(newest)
    hosts = [
        _host(
            hk,
            known=known,
            ledger_targets=ledger_targets,
            newest_ts=newest_ts,
            served=served,
            ahead_by_host=ahead_by_host,
            at_ts=at_ts,
            stale_after_s=stale_after_s,
        )
        for hk in sorted(known.found)
    ]
    return Fleet(
        source=source,
        at_ts=at_ts,
        stale_after_s=stale_after_s,
        lookback_s=lookback_s,
        hosts=tuple(hosts),
        models=_models(hosts, served),
        total=_total(hosts),
        complete={w: bool(hosts) and all(h.complete[w] for h in hosts) for w in WINDOW_NAMES},
        incomplete=_incomplete(hosts, conflicts, served.refused, ahead_by_host),
        duplicates=duplicates,
        duplicate_labels=tuple(sorted(differ_in)),
        conflicts=tuple(conflicts),
        refused=tuple(served.refused),
        notes=(*notes, *(s.note() for s in spellings), *_idle_notes(idle)),
        spellings=tuple(spellings),
    )


def _newest_times(newest: Sequence[Sample]) -> dict[str, float]:
    """Each host's newest sample time."""
    newest_ts: dict[str, float] = {}
    for labels, value in newest:
        hk = host_of(labels)
        newest_ts[hk] = max(newest_ts.get(hk, -math.inf), value)
    return newest_ts


def _host(
    hk: str,
    *,
    known: Known,
    ledger_targets: LedgerTargets,
    newest_ts: dict[str, float],
    served: Served,
    ahead_by_host: dict[str, tuple[float, str]],
    at_ts: float,
    stale_after_s: float,
) -> Host:
    """One host: its state and why, its sums and coverage, and which windows it has complete."""
    hint = ""
    why_down = ledger_targets.host_down(hk, known)
    if why_down is not None:
        state: HostState = "missing"
        why = why_down
    else:
        newest_now, ok_now = newest_ts.get(hk), served.report_ok.get(hk)
        state, why = _state(newest_now, ok_now, at_ts, stale_after_s, known.has_series(hk))
        up_now = ledger_targets.host_up(hk, known)
        if state == "missing" and (up_now or hk in ahead_by_host):
            why, hint = _ahead_why(up_now), CLOCK_AHEAD_HINT
    cov = served.host_coverage(hk)
    ahead_s = ahead_by_host[hk][0] if hk in ahead_by_host else None
    short = served.short.get(hk, set())
    return Host(
        hk,
        state,
        why,
        newest_ts.get(hk),
        served.sums.get(hk, empty_windows()),
        cov,
        tuple(sorted(served.instances.get(hk, ()))),
        known.sources(hk),
        {
            w: state == "ok" and cov[w].complete and w not in short and ahead_s is None
            for w in WINDOW_NAMES
        },
        ahead_s,
        hint,
    )


def _total(hosts: Sequence[Host]) -> dict[str, Figures]:
    """The fleet's sums: every counted host's, per window."""
    total = empty_windows()
    for h in hosts:
        if h.counted:
            for w in WINDOW_NAMES:
                total[w].add(h.windows[w])
    return total


def _idle_notes(idle: Sequence[str]) -> tuple[str, ...]:
    """The note naming up targets of the ledger jobs that are not hosts, if any."""
    if not idle:
        return ()
    shown = ", ".join(idle[:5]) + (f" and {len(idle) - 5} more" if len(idle) > 5 else "")
    return (
        f"{len(idle)} up targets of the ledger jobs serve no vllm_ledger series within the "
        f"lookback, so are not hosts ({CLOCK_AHEAD_HINT} {AHEAD_DOC}): {shown}",
    )


def _models(hosts: Sequence[Host], served: Served) -> tuple[ModelRow, ...]:
    """Each model's windows over the counted hosts serving it; complete where every (host,
    instance) serving it is."""
    counted = {h.name for h in hosts if h.counted}
    state_of = {h.name: h for h in hosts}
    models: list[ModelRow] = []
    for m in sorted({m for _h, m in served.by_model}):
        msums = empty_windows()
        model_hosts = sorted({hn for hn, mm in served.by_model if mm == m})
        for hn in model_hosts:
            if hn in counted:
                for w in WINDOW_NAMES:
                    msums[w].add(served.by_model[(hn, m)][w])
        serving = served.model_instances.get(m, set())
        complete = {
            w: all(
                state_of[hn].complete[w] and served.per_instance.get((hn, i), {}).get(w, False)
                for hn, i in serving
            )
            and bool(serving)
            for w in WINDOW_NAMES
        }
        models.append(ModelRow(m, msums, complete, tuple(model_hosts)))
    return tuple(models)


def _incomplete(
    hosts: Sequence[Host],
    conflicts: Sequence[Conflict],
    refused: Sequence[Refused],
    clock_ahead: dict[str, tuple[float, str]],
) -> tuple[str, ...]:
    """One line per reason a window is not complete, host by host."""
    lines: list[str] = []
    for h in hosts:
        if h.state != "ok":
            lines.append(f"{h.name}: {h.why}")
        else:
            uncovered = [w for w in WINDOW_NAMES if not h.coverage[w].complete]
            if uncovered:
                lines.append(f"{h.name}: incomplete in {', '.join(uncovered)}{_why(h, uncovered)}")
        lines.extend(_conflict_line(c) for c in conflicts if c.host == h.name)
        lines.extend(f"{r.host}: refused {r.why}: not counted" for r in refused if r.host == h.name)
        if h.name in clock_ahead:
            lines.append(f"{h.name}: clock ahead: {clock_ahead[h.name][1]}")
    if not hosts:
        lines.append("no host serves vllm_ledger metrics: check the scrape config")
    return tuple(lines)


def _ahead_why(up_now: bool) -> str:
    """A host with no sample now whose target is up, or whose samples are stamped ahead."""
    seen = "while its target is up (up == 1)" if up_now else "only samples stamped ahead of now"
    return (
        f"no vllm_ledger sample now, {seen}: {CLOCK_AHEAD_HINT} (a sample stamped after the "
        f"query's instant is hidden until then, {AHEAD_DOC})"
    )


def shown_value(value: float) -> str:
    """A served value as a line shows it: ``5,150``, ``0.25``, ``-3``, ``inf``, ``nan``."""
    if not math.isfinite(value):
        return str(value)
    if value == math.floor(value) and abs(value) < 2**63:
        return f"{int(value):,}"
    return f"{value:g}"


def _conflict_line(c: Conflict) -> str:
    vals = " and ".join(shown_value(v) for v in c.values)
    differ = f" (the copies differ in {', '.join(c.differ_in)})" if c.differ_in else ""
    return f"{c.host}: conflict: {c.series} is {vals}{differ}: not counted"


def _state(
    newest: float | None,
    report_ok: float | None,
    at_ts: float,
    stale_after_s: float,
    has_series: bool,
) -> tuple[HostState, str]:
    if newest is None:
        if has_series:
            return "missing", "its series stopped (no sample now, some within the lookback)"
        return "missing", "no vllm_ledger series now"
    age = at_ts - newest
    if age > stale_after_s:
        return "stale", f"newest sample {age:.0f} s old (limit {stale_after_s:g} s)"
    if report_ok is not None and report_ok < 1:
        return "failing", f"its exporter cannot read its ledgers ({names.LEDGER_REPORT_OK} 0)"
    return "ok", ""


def _why(h: Host, short: list[str]) -> str:
    """Why: the problem codes, and the seconds the longest incomplete window has uncovered."""
    parts = sorted({code for w in short for code in h.coverage[w].problems})
    uncovered = h.coverage[short[-1]].uncovered_seconds
    if uncovered:
        parts.append(f"{format_duration(uncovered, 'words')} uncovered in {short[-1]}")
    return f" ({'; '.join(parts)})" if parts else ""


__all__ = [
    "CLOCK_AHEAD_HINT",
    "HOST_STATES",
    "LOOKBACK_S",
    "STALE_AFTER_S",
    "Fleet",
    "Host",
    "HostState",
    "ModelRow",
    "build_fleet",
    "shown_value",
]
