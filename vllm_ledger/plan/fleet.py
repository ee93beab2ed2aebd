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
that did within ``JOBS_HISTORY_S``). A host is

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
Every value passes the project's value gate (``read/values.py``): a negative, non-finite,
fractional count or absurd figure is ``Refused`` and not summed; a sample stamped
more than ``AHEAD_TOLERANCE_S`` after the query's instant names that host's clock as ahead.

A window of the fleet is complete only when every host is ``ok`` and complete in that window
(its whole-root coverage series, without ``ledger_instance``) with no conflict, refused value or
clock ahead; otherwise ``incomplete`` names each host and why. A model's window is complete
when every host instance serving it is.

``read_fleet`` asks six instant queries (``plan.prom.vector_query``: labels and values, through
``plan.prom.http_get``), the jobs that serve ledger series (``plan.prom.label_values``) and the
targets (``plan.prom.targets``); ``build_fleet`` is pure; ``formats/fleet.py`` renders its text
and JSON forms. docs/fleet.md says how hosts are found and what each line means.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from vllm_ledger import figures, names
from vllm_ledger.errors import BadValues, RemoteError
from vllm_ledger.plan.fleet_copies import (
    Conflict,
    Sample,
    Spelling,
    host_of,
    one_exporter,
    series_key,
    series_text,
    take_once,
)
from vllm_ledger.plan.fleet_targets import Found, Known, LedgerTargets
from vllm_ledger.plan.prom import Fetch, Target, http_get, label_values, targets, vector_query
from vllm_ledger.read import values
from vllm_ledger.read.windows import WINDOW_NAMES  # the windows each exporter serves
from vllm_ledger.units import EARLIEST_AT, LATEST_AT, format_duration

# The figures each host's exporter serves per window (``vllm_ledger_window_<name>``).
FIGURE_NAMES: tuple[str, ...] = figures.report_names()
COVERAGE_NAMES: tuple[str, ...] = ("uncovered_seconds", "wall_seconds", "complete", "problems")
HostState = Literal["ok", "stale", "missing", "failing"]
HOST_STATES: tuple[HostState, ...] = ("ok", "stale", "missing", "failing")
PREFIX = names.EXPORTER_PREFIX + "_"
STALE_AFTER_S = names.EXPORTER_SAMPLE_STALE_AFTER_S
LOOKBACK_S = 3600.0
# A sample may be stamped this far after the query's instant (clocks a little apart) before its
# host's clock is named as ahead; the "ahead" query is asked ``AHEAD_S`` after that instant (at
# most Prometheus's default 5-minute lookback delta, so it sees every sample in between).
AHEAD_TOLERANCE_S = 60.0
AHEAD_S = 300.0
# Where a host has no sample now while its target is up, or only samples stamped ahead: its
# clock may be ahead (Prometheus hides a sample stamped after the query's instant).
CLOCK_AHEAD_HINT = "clock ahead?"
AHEAD_DOC = "docs/fleet.md#a-clock-ahead"
# The jobs whose targets are hosts: those that served ledger series this far back.
JOBS_HISTORY_S = 7 * 86400.0


# ---- the model -------------------------------------------------------------------------------


@dataclass
@figures.with_figure_fields("report_name", "int | float")
class Figures:
    """One window's figures, summed over series (a host's, a model's, the fleet's): a field per
    ``FIGURE_NAMES`` (one not declared here from ``figures.with_figure_fields``)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    requests: int = 0
    decode_tokens: int = 0
    decode_seconds: float = 0.0

    def add(self, other: Figures) -> None:
        for name in FIGURE_NAMES:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def put(self, name: str, value: float) -> None:
        """Add one sample of ``vllm_ledger_window_<name>``: a count as an integer."""
        whole = _COUNTED[name]
        setattr(self, name, getattr(self, name) + (round(value) if whole else value))

    @property
    def hit_rate(self) -> float | None:
        return self.cached_tokens / self.input_tokens if self.input_tokens else None

    @property
    def gen_speed(self) -> float | None:
        return self.decode_tokens / self.decode_seconds if self.decode_seconds > 0 else None


# Whether a figure is a count (an integer) or a converted one (decode seconds).
_COUNTED: dict[str, bool] = {f.report_name: f.report_divisor == 1 for f in figures.FIGURES}


@dataclass(frozen=True)
class Coverage:
    """A window's coverage as a host's exporter serves it for its whole root."""

    uncovered_seconds: int | None = None
    wall_seconds: int | None = None
    complete: bool = False
    problems: dict[str, int] = field(default_factory=dict)


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
class Refused:
    """A value the value gate refused (``read/values.py``): not counted."""

    host: str
    window: str  # "" for a series without one
    series: str
    value: float
    why: str  # the gate's words


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

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(h.name for h in self.hosts if h.state == "missing")


def _target(labels: dict[str, str]) -> tuple[str, str]:
    return labels.get("job", ""), labels.get("instance", "")


def _empty_windows() -> dict[str, Figures]:
    return {w: Figures() for w in WINDOW_NAMES}


# How each served value is judged (``read/values.py``): a figure by its own bound, coverage by
# its range.
_FIGURE: dict[str, figures.Figure] = {f.report_name: f for f in figures.FIGURES}
_MOST_SECONDS = LATEST_AT - EARLIEST_AT


def check_sample(name: str, labels: dict[str, str], value: float) -> float:
    """``value`` of one served series through the value gate, or ``BadValues``."""
    what = series_text(labels)
    if name == "report_ok" or name == "complete":
        return values.check_number(what, value, most=1, whole=True)
    if name in _FIGURE:
        return values.check_reported(what, value, _FIGURE[name])
    if name == "problems":
        return values.check_number(what, value, most=values.MAX_COUNT, whole=True)
    return values.check_number(what, value, most=_MOST_SECONDS)


@dataclass
class _Served:
    """What the hosts' window gauges add up to, each series once (``take_once``)."""

    report_ok: dict[str, float] = field(default_factory=dict)
    sums: dict[str, dict[str, Figures]] = field(default_factory=dict)
    coverage: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    per_instance: dict[tuple[str, str], dict[str, bool]] = field(default_factory=dict)
    by_model: dict[tuple[str, str], dict[str, Figures]] = field(default_factory=dict)
    model_instances: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    instances: dict[str, set[str]] = field(default_factory=dict)
    refused: list[Refused] = field(default_factory=list)
    short: dict[str, set[str]] = field(default_factory=dict)  # windows a bad series leaves short

    def add(self, labels: dict[str, str], raw: float) -> None:
        """One series (its one copy) into the host's, its model's and its coverage's sums."""
        hk = host_of(labels)
        metric = labels.get("__name__", "")
        name = metric.removeprefix(PREFIX).removeprefix("window_")
        window = labels.get(names.WINDOW_LABEL, "")
        if metric != names.LEDGER_REPORT_OK and window not in WINDOW_NAMES:
            return
        try:
            value = check_sample(name, labels, raw)
        except BadValues as exc:
            self.refused.append(Refused(hk, window, series_text(labels), raw, exc.what))
            self.short.setdefault(hk, set()).update([window] if window else WINDOW_NAMES)
            return
        if metric == names.LEDGER_REPORT_OK:
            self.report_ok[hk] = min(self.report_ok.get(hk, 1.0), value)
            return
        inst = labels.get(names.LEDGER_INSTANCE_LABEL)
        model = labels.get(names.MODEL_NAME_LABEL)
        if inst:
            self.instances.setdefault(hk, set()).add(inst)
        if name in FIGURE_NAMES:
            self.sums.setdefault(hk, _empty_windows())[window].put(name, value)
            if model is not None:
                self.by_model.setdefault((hk, model), _empty_windows())[window].put(name, value)
                if inst:
                    self.model_instances.setdefault(model, set()).add((hk, inst))
        elif name in COVERAGE_NAMES and inst:
            if name == "complete":
                self.per_instance.setdefault((hk, inst), {})[window] = value == 1.0
        elif name in COVERAGE_NAMES:  # the whole root's: no ledger_instance label
            got = self.coverage.setdefault(hk, {}).setdefault(window, {"problems": {}})
            if name == "problems":
                code = labels.get(names.PROBLEM_LABEL, "?")
                got["problems"][code] = got["problems"].get(code, 0) + round(value)
            elif name == "complete":
                got["complete"] = value == 1.0
            else:
                got[name] = round(value)

    def host_coverage(self, hk: str) -> dict[str, Coverage]:
        got = {
            w: Coverage(
                c.get("uncovered_seconds"),
                c.get("wall_seconds"),
                bool(c.get("complete", False)),
                dict(sorted(c["problems"].items())),
            )
            for w, c in self.coverage.get(hk, {}).items()
        }
        return {w: got.get(w, Coverage()) for w in WINDOW_NAMES}


def _clock_ahead(ahead: Sequence[Sample], at_ts: float) -> dict[str, tuple[float, str]]:
    """Per host whose newest sample is stamped more than ``AHEAD_TOLERANCE_S`` after ``at_ts``:
    how far, and the value gate's words."""
    out: dict[str, tuple[float, str]] = {}
    for labels, value in ahead:
        try:
            values.check_sample_time(
                names.LEDGER_REPORT_OK, value, at_ts=at_ts, ahead_s=AHEAD_TOLERANCE_S
            )
        except BadValues as exc:
            hk = host_of(labels)
            skew = value - at_ts if math.isfinite(value) else math.inf
            if skew > out.get(hk, (-math.inf, ""))[0]:
                out[hk] = (skew, exc.what)
    return out


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
    - ``ahead``: ``timestamp(vllm_ledger_report_ok)`` asked ``AHEAD_S`` after ``at_ts``;

    and ``scrape_targets`` (``/api/v1/targets``; None: not read) and ``jobs`` (the jobs that
    served ledger series; None: not read), both for the jobs ``job`` (``--job``) or ``jobs``
    and the ledger series name.
    """
    known = Known.of(job, jobs)
    for labels, _value in [*seen, *newest, *ahead, *windows]:
        known.add(labels, "series")
    newest_ts: dict[str, float] = {}
    for labels, value in newest:
        hk = host_of(labels)
        newest_ts[hk] = max(newest_ts.get(hk, -math.inf), value)
    clock_ahead = _clock_ahead(ahead, at_ts)
    exporters, spellings = one_exporter(windows)
    unique, duplicates, differ_in, conflicts = take_once(windows, exporters)
    served = _Served()
    for c in conflicts:
        served.short.setdefault(c.host, set()).update([c.window] if c.window else WINDOW_NAMES)
    for labels, raw in unique:
        served.add(labels, raw)
    ledger_targets = LedgerTargets.of(up, up_seen, scrape_targets, known)
    idle = ledger_targets.admit(known)

    hosts: list[Host] = []
    for hk in sorted(known.found):
        hint = ""
        why_down = ledger_targets.host_down(hk, known)
        if why_down is not None:
            state: HostState = "missing"
            why = why_down
        else:
            newest_now, ok_now = newest_ts.get(hk), served.report_ok.get(hk)
            state, why = _state(newest_now, ok_now, at_ts, stale_after_s, known.has_series(hk))
            up_now = ledger_targets.host_up(hk, known)
            if state == "missing" and (up_now or hk in clock_ahead):
                why, hint = _ahead_why(up_now), CLOCK_AHEAD_HINT
        cov = served.host_coverage(hk)
        ahead_s = clock_ahead[hk][0] if hk in clock_ahead else None
        short = served.short.get(hk, set())
        hosts.append(
            Host(
                hk,
                state,
                why,
                newest_ts.get(hk),
                served.sums.get(hk, _empty_windows()),
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
        )
    total = _empty_windows()
    for h in hosts:
        if h.counted:
            for w in WINDOW_NAMES:
                total[w].add(h.windows[w])
    all_notes = [*notes, *(s.note() for s in spellings)]
    if idle:
        shown = ", ".join(idle[:5]) + (f" and {len(idle) - 5} more" if len(idle) > 5 else "")
        all_notes.append(
            f"{len(idle)} up targets of the ledger jobs serve no vllm_ledger series within the "
            f"lookback, so are not hosts ({CLOCK_AHEAD_HINT} {AHEAD_DOC}): {shown}"
        )
    return Fleet(
        source=source,
        at_ts=at_ts,
        stale_after_s=stale_after_s,
        lookback_s=lookback_s,
        hosts=tuple(hosts),
        models=_models(hosts, served),
        total=total,
        complete={w: bool(hosts) and all(h.complete[w] for h in hosts) for w in WINDOW_NAMES},
        incomplete=_incomplete(hosts, conflicts, served.refused, clock_ahead),
        duplicates=duplicates,
        duplicate_labels=tuple(sorted(differ_in)),
        conflicts=tuple(conflicts),
        refused=tuple(served.refused),
        notes=tuple(all_notes),
        spellings=tuple(spellings),
    )


def _models(hosts: Sequence[Host], served: _Served) -> tuple[ModelRow, ...]:
    """Each model's windows over the counted hosts serving it; complete where every (host,
    instance) serving it is."""
    counted = {h.name for h in hosts if h.counted}
    state_of = {h.name: h for h in hosts}
    models: list[ModelRow] = []
    for m in sorted({m for _h, m in served.by_model}):
        msums = _empty_windows()
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


# ---- the queries -----------------------------------------------------------------------------


def _selector(name: str, job: str | None) -> str:
    """``name`` (a regular expression over metric names when it holds ``|``), in ``job``."""
    matchers = [f'__name__=~"{name}"'] if "|" in name else []
    if job is not None:
        matchers.append(f"job={json.dumps(job)}")
    base = "" if "|" in name else name
    return base + ("{" + ",".join(matchers) + "}" if matchers else "")


def queries(job: str | None = None, lookback_s: float = LOOKBACK_S) -> dict[str, str]:
    """The instant queries ``build_fleet`` takes, by its argument names (``ahead`` is asked
    ``AHEAD_S`` after the others)."""
    window = (
        f"{PREFIX}(report_ok|window_("
        + "|".join(name for name in (*FIGURE_NAMES, *COVERAGE_NAMES))
        + "))"
    )
    ok = _selector(names.LEDGER_REPORT_OK, job)
    lookback = format_duration(lookback_s, "range")
    return {
        "windows": _selector(window, job),
        "newest": f"timestamp({ok})",
        "up": _selector("up", job),
        "seen": f"max_over_time({ok}[{lookback}])",
        "up_seen": f"max_over_time({_selector('up', job)}[{lookback}])",
        "ahead": f"timestamp({ok})",
    }


def read_fleet(
    base_url: str,
    *,
    job: str | None = None,
    stale_after_s: float = STALE_AFTER_S,
    lookback_s: float = LOOKBACK_S,
    clock: Any = time.time,
    fetch: Fetch = http_get,
) -> Fleet:
    """Ask ``base_url`` (Prometheus or a compatible API) the queries at one instant, the jobs
    that serve ledger series (unless ``job``) and the scrape targets. A store without the
    targets or label API is read without it, and the fleet says so in a note."""
    at = clock()
    answers = {
        name: vector_query(
            base_url,
            expr,
            at + AHEAD_S if name == "ahead" else at,
            fetch,
            keep_nan=name == "windows",  # a NaN figure is named, not dropped
        )
        for name, expr in queries(job, lookback_s).items()
    }
    notes: list[str] = []
    jobs: list[str] | None = None
    if job is None:
        try:
            jobs = label_values(
                base_url, "job", names.LEDGER_REPORT_OK, at - JOBS_HISTORY_S, at, fetch
            )
        except RemoteError as exc:
            notes.append(f"the jobs serving ledger series were not read ({exc.what})")
    found: list[Target] | None = None
    try:
        found = targets(base_url, fetch)
    except RemoteError as exc:
        notes.append(
            f"/api/v1/targets was not read ({exc.what}): hosts come from the series and up only"
        )
    return build_fleet(
        answers["windows"],
        answers["newest"],
        answers["up"],
        answers["seen"],
        up_seen=answers["up_seen"],
        ahead=answers["ahead"],
        scrape_targets=found,
        jobs=jobs,
        job=job,
        notes=notes,
        source=base_url,
        at_ts=at,
        stale_after_s=stale_after_s,
        lookback_s=lookback_s,
    )


__all__ = [
    "CLOCK_AHEAD_HINT",
    "HOST_STATES",
    "Conflict",
    "Coverage",
    "Figures",
    "Fleet",
    "Host",
    "HostState",
    "ModelRow",
    "Refused",
    "Spelling",
    "build_fleet",
    "host_of",
    "queries",
    "read_fleet",
    "series_key",
    "series_text",
    "shown_value",
    "take_once",
]
