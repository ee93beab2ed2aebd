"""A fleet: many hosts, each running ``vllm-ledger exporter``, read back from one Prometheus (or
a Prometheus-compatible store: VictoriaMetrics, Thanos, Mimir; the same queries).

Each host's figures are its exporter's own window gauges, the latest sample of each
(``vllm_ledger_window_*``), never ``increase()`` over scrape edges: a window's figure is then
exactly what ``vllm-ledger report`` says on that host, and the fleet's is their sum. A host is
the exporter's scrape target: the ``host`` label where relabelling adds one, else Prometheus's
``instance``.

A host is

- ``ok``: its newest sample is at most ``stale_after_s`` old and its exporter read its ledgers;
- ``stale``: its newest sample is older than that (Prometheus stopped scraping it, remote write
  lags); its figures still count, but nothing it says is complete;
- ``missing``: its target is down (``up == 0``), or it had series within ``lookback_s`` and has
  none now (its series stopped). Its figures are not in the sum;
- ``failing``: its exporter answers but cannot read its ledgers (``vllm_ledger_report_ok 0``).

A window of the fleet is complete only when every host is ``ok`` and complete in that window
(its whole-root coverage series, without ``ledger_instance``); otherwise ``incomplete`` names
each host and why. A model's window is complete when every host instance serving it is.

``read_fleet`` asks four instant queries (``plan.prom.vector_query``: labels and values,
through ``plan.prom.http_get``); ``build_fleet`` is pure; ``formats/fleet.py`` renders its
text and JSON forms.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from vllm_ledger import figures, names
from vllm_ledger.plan.prom import Fetch, http_get, vector_query
from vllm_ledger.read.windows import WINDOW_NAMES  # the windows each exporter serves
from vllm_ledger.units import format_duration

# The figures each host's exporter serves per window (``vllm_ledger_window_<name>``).
FIGURE_NAMES: tuple[str, ...] = figures.report_names()
COVERAGE_NAMES: tuple[str, ...] = ("uncovered_seconds", "wall_seconds", "complete", "problems")
HostState = Literal["ok", "stale", "missing", "failing"]
HOST_STATES: tuple[HostState, ...] = ("ok", "stale", "missing", "failing")
PREFIX = names.EXPORTER_PREFIX + "_"
STALE_AFTER_S = names.EXPORTER_SAMPLE_STALE_AFTER_S
LOOKBACK_S = 3600.0

Sample = tuple[dict[str, str], float]


# ---- the model -------------------------------------------------------------------------------


@dataclass
class Figures:
    """One window's figures, summed over series (a host's, a model's, the fleet's): a field per
    ``FIGURE_NAMES``."""

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
    incomplete: tuple[str, ...]  # one line per host that keeps a window from being complete


def host_of(labels: dict[str, str]) -> str:
    """The host a series comes from: its ``host`` label (added by relabelling) or Prometheus's
    ``instance`` (the scrape target)."""
    return labels.get("host") or labels.get("instance") or "?"


def _target(labels: dict[str, str]) -> tuple[str, str]:
    return labels.get("job", ""), labels.get("instance", "")


def _empty_windows() -> dict[str, Figures]:
    return {w: Figures() for w in WINDOW_NAMES}


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
) -> Fleet:
    """The fleet from four instant queries at ``at_ts`` (``read_fleet`` asks them):

    - ``windows``: ``{__name__=~"vllm_ledger_(window_...|report_ok)"}``, the latest samples;
    - ``newest``: ``timestamp(vllm_ledger_report_ok)``, each host's newest sample time;
    - ``up``: ``up``, to tell a target that is down;
    - ``seen``: ``max_over_time(vllm_ledger_report_ok[lookback])``, every host of the lookback.
    """
    newest_ts: dict[str, float] = {}
    targets: dict[str, set[tuple[str, str]]] = {}
    for labels, _value in [*seen, *newest]:
        targets.setdefault(host_of(labels), set()).add(_target(labels))
    for labels, value in newest:
        hk = host_of(labels)
        newest_ts[hk] = max(newest_ts.get(hk, -math.inf), value)
    up_by_target: dict[tuple[str, str], float] = {_target(labels): v for labels, v in up}
    report_ok: dict[str, float] = {}
    figures: dict[str, dict[str, Figures]] = {}
    coverage: dict[str, dict[str, dict[str, Any]]] = {}
    per_instance: dict[tuple[str, str], dict[str, bool]] = {}  # (host, instance) -> complete
    by_model: dict[tuple[str, str], dict[str, Figures]] = {}  # (host, model) -> windows
    model_instances: dict[str, set[tuple[str, str]]] = {}
    instances: dict[str, set[str]] = {}
    for labels, value in windows:
        hk = host_of(labels)
        targets.setdefault(hk, set()).add(_target(labels))
        name = labels.get("__name__", "").removeprefix(PREFIX)
        if labels.get("__name__") == names.LEDGER_REPORT_OK:
            report_ok[hk] = min(report_ok.get(hk, 1.0), value)
            continue
        name = name.removeprefix("window_")
        window = labels.get(names.WINDOW_LABEL, "")
        if window not in WINDOW_NAMES or not math.isfinite(value):
            continue
        inst = labels.get(names.LEDGER_INSTANCE_LABEL)
        model = labels.get(names.MODEL_NAME_LABEL)
        if inst:
            instances.setdefault(hk, set()).add(inst)
        if name in FIGURE_NAMES:
            figures.setdefault(hk, _empty_windows())[window].put(name, value)
            if model is not None:
                by_model.setdefault((hk, model), _empty_windows())[window].put(name, value)
                if inst:
                    model_instances.setdefault(model, set()).add((hk, inst))
        elif name in COVERAGE_NAMES and inst:
            if name == "complete":
                per_instance.setdefault((hk, inst), {})[window] = value == 1.0
        elif name in COVERAGE_NAMES:  # the whole root's: no ledger_instance label
            got = coverage.setdefault(hk, {}).setdefault(window, {"problems": {}})
            if name == "problems":
                code = labels.get(names.PROBLEM_LABEL, "?")
                got["problems"][code] = got["problems"].get(code, 0) + round(value)
            elif name == "complete":
                got["complete"] = value == 1.0
            else:
                got[name] = round(value)

    hosts: list[Host] = []
    for hk in sorted(targets):
        state, why = _state(
            hk,
            newest_ts.get(hk),
            [up_by_target.get(t) for t in sorted(targets[hk])],
            report_ok.get(hk),
            at_ts,
            stale_after_s,
        )
        cov = {
            w: Coverage(
                c.get("uncovered_seconds"),
                c.get("wall_seconds"),
                bool(c.get("complete", False)),
                dict(sorted(c["problems"].items())),
            )
            for w, c in coverage.get(hk, {}).items()
        }
        hosts.append(
            Host(
                hk,
                state,
                why,
                newest_ts.get(hk),
                figures.get(hk, _empty_windows()),
                {w: cov.get(w, Coverage()) for w in WINDOW_NAMES},
                tuple(sorted(instances.get(hk, ()))),
            )
        )
    counted = {h.name for h in hosts if h.counted}
    state_of = {h.name: h for h in hosts}

    total = _empty_windows()
    for h in hosts:
        if h.counted:
            for w in WINDOW_NAMES:
                total[w].add(h.windows[w])
    models: list[ModelRow] = []
    for m in sorted({m for _h, m in by_model}):
        sums = _empty_windows()
        model_hosts = sorted({hn for hn, mm in by_model if mm == m})
        for hn in model_hosts:
            if hn in counted:
                for w in WINDOW_NAMES:
                    sums[w].add(by_model[(hn, m)][w])
        serving = model_instances.get(m, set())
        complete = {
            w: all(
                state_of[hn].state == "ok" and per_instance.get((hn, i), {}).get(w, False)
                for hn, i in serving
            )
            and bool(serving)
            for w in WINDOW_NAMES
        }
        models.append(ModelRow(m, sums, complete, tuple(model_hosts)))

    incomplete: list[str] = []
    fleet_complete = dict.fromkeys(WINDOW_NAMES, bool(hosts))
    for h in hosts:
        if h.state != "ok":
            incomplete.append(f"{h.name}: {h.why}")
            fleet_complete = dict.fromkeys(WINDOW_NAMES, False)
            continue
        short = [w for w in WINDOW_NAMES if not h.coverage[w].complete]
        for w in short:
            fleet_complete[w] = False
        if short:
            incomplete.append(f"{h.name}: incomplete in {', '.join(short)}{_why(h, short)}")
    if not hosts:
        incomplete.append("no host serves vllm_ledger metrics: check the scrape config")
    return Fleet(
        source=source,
        at_ts=at_ts,
        stale_after_s=stale_after_s,
        lookback_s=lookback_s,
        hosts=tuple(hosts),
        models=tuple(models),
        total=total,
        complete=fleet_complete,
        incomplete=tuple(incomplete),
    )


def _state(
    host: str,
    newest: float | None,
    ups: list[float | None],
    report_ok: float | None,
    at_ts: float,
    stale_after_s: float,
) -> tuple[HostState, str]:
    if any(u == 0 for u in ups):
        return "missing", "its target is down (up == 0)"
    if newest is None:
        return "missing", "its series stopped (no sample now, some within the lookback)"
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
        parts.append(f"{uncovered:,} s uncovered in {short[-1]}")
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
    """The four instant queries ``build_fleet`` takes, by its argument names."""
    window = (
        f"{PREFIX}(report_ok|window_("
        + "|".join(name for name in (*FIGURE_NAMES, *COVERAGE_NAMES))
        + "))"
    )
    ok = _selector(names.LEDGER_REPORT_OK, job)
    return {
        "windows": _selector(window, job),
        "newest": f"timestamp({ok})",
        "up": _selector("up", job),
        "seen": f"max_over_time({ok}[{format_duration(lookback_s, 'range')}])",
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
    """Ask ``base_url`` (Prometheus or a compatible API) the four queries at one instant."""
    at = clock()
    answers = {
        name: vector_query(base_url, expr, at, fetch)
        for name, expr in queries(job, lookback_s).items()
    }
    return build_fleet(
        answers["windows"],
        answers["newest"],
        answers["up"],
        answers["seen"],
        source=base_url,
        at_ts=at,
        stale_after_s=stale_after_s,
        lookback_s=lookback_s,
    )


__all__ = [
    "HOST_STATES",
    "Coverage",
    "Figures",
    "Fleet",
    "Host",
    "HostState",
    "ModelRow",
    "build_fleet",
    "host_of",
    "queries",
    "read_fleet",
]
