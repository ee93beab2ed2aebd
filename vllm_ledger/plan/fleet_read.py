"""A fleet read from Prometheus (or a compatible store: the same queries): the instant queries
``build_fleet`` takes (``queries``), and ``read_fleet``, which asks them at one instant with the
jobs that serve ledger series and the scrape targets, through ``plan/prom.py``, and marks the
fleet with what the store said of each answer (``plan/fleet_partial.py``: a partial answer
leaves nothing complete).
"""

from __future__ import annotations

import json
import time
from typing import Any

from vllm_ledger import names
from vllm_ledger.errors import RemoteError
from vllm_ledger.plan.fleet import LOOKBACK_S, STALE_AFTER_S, Fleet, build_fleet
from vllm_ledger.plan.fleet_partial import with_said
from vllm_ledger.plan.fleet_sums import COVERAGE_NAMES, FIGURE_NAMES, PREFIX
from vllm_ledger.plan.prom import (
    Fetch,
    Said,
    Target,
    http_get,
    label_values_answer,
    targets_answer,
    vector_answer,
)
from vllm_ledger.units import format_duration

# The "ahead" query is asked this long after the others' instant (at most Prometheus's default
# 5-minute lookback delta, so it sees every sample in between): a sample stamped ahead of that
# instant is hidden from them (``plan/fleet_checks.py``).
AHEAD_S = 300.0
# The jobs whose targets are hosts: those that served ledger series this far back.
JOBS_HISTORY_S = 7 * 86400.0


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
    targets or label API is read without it, and the fleet says so in a note. An answer the
    store called partial, or gave a warning with, leaves no window complete (``with_said``)."""
    at = clock()
    asked = {
        name: vector_answer(
            base_url,
            expr,
            at + AHEAD_S if name == "ahead" else at,
            fetch,
            keep_nan=name == "windows",  # a NaN figure is named, not dropped
        )
        for name, expr in queries(job, lookback_s).items()
    }
    answers = {name: series for name, (series, _said) in asked.items()}
    said: dict[str, Said] = {name: s for name, (_series, s) in asked.items()}
    notes: list[str] = []
    jobs: list[str] | None = None
    if job is None:
        try:
            jobs, said["jobs"] = label_values_answer(
                base_url, "job", names.LEDGER_REPORT_OK, at - JOBS_HISTORY_S, at, fetch
            )
        except RemoteError as exc:
            notes.append(f"the jobs serving ledger series were not read ({exc.what})")
    found: list[Target] | None = None
    try:
        found, said["targets"] = targets_answer(base_url, fetch)
    except RemoteError as exc:
        notes.append(
            f"/api/v1/targets was not read ({exc.what}): hosts come from the series and up only"
        )
    fleet = build_fleet(
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
    return with_said(fleet, said)


__all__ = ["AHEAD_S", "JOBS_HISTORY_S", "queries", "read_fleet"]
