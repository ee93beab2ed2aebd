"""``doctor --stack PROMETHEUS_URL``: the monitoring stack is whole, as Prometheus itself says.

Two rows, read from Prometheus's own API (``plan/prom.py``, the one HTTP client):

- ``stack targets`` (``/api/v1/targets``): every job the stack cannot do without
  (``REQUIRED_JOBS``: vLLM and the ledger exporter) has a target, and every active target is
  up; each one down is named (job, instance, the scrape's error). A target not scraped yet
  (``unknown``) warns: Prometheus has not tried it.
- ``stack rules`` (``/api/v1/rules``): the alert rules' group is loaded (``GROUP_NAME``, what
  ``observability`` writes to alerts.yml) and no rule is in error (each named, with
  Prometheus's error). Prometheus refuses to start on a rule file it cannot parse, and keeps
  the old rules when a reload fails: a group missing here is a file it never loaded.

Any error reaching Prometheus is the row's failure, never a traceback. An answer the store
called partial or gave a warning with (Thanos Query's partial response, ``plan/partial.py``) may
not list every target or rule group: it passes no row (a pass becomes a warning, a failure stays
one), and the store's words follow what was checked.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import Any

from vllm_ledger.doctor.base import Row
from vllm_ledger.errors import ConfigError, RemoteError
from vllm_ledger.observe.alerts import GROUP_NAME
from vllm_ledger.observe.signals import EXPORTER_JOB, VLLM_JOB
from vllm_ledger.plan.partial import said_lines
from vllm_ledger.plan.prom import (
    MAX_ANSWER_BYTES,
    Said,
    Target,
    http_get,
    said_of,
    targets_answer,
)
from vllm_ledger.strictjson import loads

Fetch = Callable[[str], bytes]
REQUIRED_JOBS = (VLLM_JOB, EXPORTER_JOB)
MAX_NAMED = 8  # targets or rules named in one row; the rest counted
FIX_TARGETS = (
    "start what is down, or correct its address in prometheus.yml (observability --vllm/"
    "--exporter ...; docs/observability.md), then curl its /metrics from the Prometheus host"
)
FIX_REACH = (
    "check that Prometheus answers at PROMETHEUS_URL (its web address, e.g. http://HOST:9090)"
)
FIX_RULES = (
    "promtool check rules alerts.yml, give Prometheus the file (rule_files in prometheus.yml) "
    "and reload it (docs/observability.md)"
)
FIX_PARTIAL = (
    "check the store (Thanos Query's stores page, vmselect's logs) and run it again once every "
    "node answers"
)
PARTIAL_DOC = "docs/doctor.md#a-partial-answer"
WHOLE = Said()  # an answer of which the store said nothing


def _named(items: list[str]) -> str:
    shown = "; ".join(items[:MAX_NAMED])
    return shown + (f"; and {len(items) - MAX_NAMED} more" if len(items) > MAX_NAMED else "")


def with_said(row: Row, asked: str, missing: str, said: Said) -> Row:
    """``row`` where the store called its answer to ``asked`` partial or gave a warning with
    it (``missing``: what it may lack): a pass becomes a warning, since what was listed may not
    be all there is; a failure stays one. The store's words follow what was checked. Pure."""
    if not said.incomplete:
        return row
    checked = "; ".join([row.checked, *said_lines(asked, said, missing, PARTIAL_DOC)])
    if not row.passed:
        return Row(row.check, False, checked, row.fix)
    fix = f"{row.fix}; {FIX_PARTIAL}" if row.fix else FIX_PARTIAL
    return Row(row.check, True, checked, fix, warn=True)


def targets_row(base_url: str, fetch: Fetch = http_get) -> Row:
    """Every required job has a target and every active target is up."""
    try:
        found, said = targets_answer(base_url, fetch)
    except RemoteError as exc:
        return Row("stack", False, f"stack targets: {exc.what}", FIX_REACH)
    return judge_targets(found, said)


def judge_targets(found: list[Target], said: Said = WHOLE) -> Row:
    """The targets row from ``/api/v1/targets``'s active targets and what the store said of
    them. Pure."""
    return with_said(_judge_targets(found), "/api/v1/targets", "a target", said)


def _judge_targets(found: list[Target]) -> Row:
    jobs = {t.labels.get("job", "") for t in found}
    missing = [job for job in REQUIRED_JOBS if job not in jobs]
    down = [
        f"{t.labels.get('job', '?')}/{t.labels.get('instance', '?')} down"
        + (f" ({t.last_error})" if t.last_error else "")
        for t in found
        if t.health == "down"
    ]
    unknown = [
        f"{t.labels.get('job', '?')}/{t.labels.get('instance', '?')}"
        for t in found
        if t.health not in ("up", "down")
    ]
    problems = [f"no {job} target" for job in missing] + down
    if problems:
        return Row("stack", False, f"stack targets: {_named(problems)}", FIX_TARGETS)
    up = len(found) - len(unknown)
    checked = f"stack targets: {up} of {len(found)} up ({', '.join(sorted(jobs))})"
    if unknown:
        return Row(
            "stack",
            True,
            f"{checked}; not scraped yet: {_named(unknown)}",
            "run it again after a scrape interval",
            warn=True,
        )
    return Row("stack", True, checked)


def _rule_groups(base_url: str, fetch: Fetch) -> tuple[list[Any], Said]:
    url = base_url.rstrip("/") + "/api/v1/rules?" + urllib.parse.urlencode({"type": "alert"})
    try:
        doc = loads(fetch(url), max_bytes=MAX_ANSWER_BYTES, what=f"{base_url}'s answer")
    except ConfigError as exc:
        raise RemoteError(
            f"{base_url} did not answer /api/v1/rules with JSON: {exc.what}", url
        ) from exc
    data = doc.get("data") if isinstance(doc, dict) else None
    groups = data.get("groups") if isinstance(data, dict) else None
    if not isinstance(doc, dict) or doc.get("status") != "success" or not isinstance(groups, list):
        raise RemoteError(f"{base_url} answered /api/v1/rules without its groups", url)
    return groups, said_of(doc)


def rules_row(base_url: str, fetch: Fetch = http_get) -> Row:
    """The alert rules' group is loaded and no rule is in error."""
    try:
        groups, said = _rule_groups(base_url, fetch)
    except RemoteError as exc:
        return Row("stack", False, f"stack rules: {exc.what}", FIX_REACH)
    return judge_rules(groups, said)


def judge_rules(groups: list[Any], said: Said = WHOLE) -> Row:
    """The rules row from ``/api/v1/rules``'s groups and what the store said of them. Pure."""
    return with_said(_judge_rules(groups), "/api/v1/rules", "a rule group", said)


def _judge_rules(groups: list[Any]) -> Row:
    names = {str(g.get("name")) for g in groups if isinstance(g, dict)}
    rules = [
        r
        for g in groups
        if isinstance(g, dict) and isinstance(g.get("rules"), list)
        for r in g["rules"]
        if isinstance(r, dict)
    ]
    broken = [
        f"{r.get('name', '?')}: {r.get('lastError') or r.get('health')}"
        for r in rules
        if r.get("health") not in ("ok", "unknown")
    ]
    problems = ([] if GROUP_NAME in names else [f"no group {GROUP_NAME} (alerts.yml)"]) + broken
    if problems:
        return Row("stack", False, f"stack rules: {_named(problems)}", FIX_RULES)
    firing = sum(1 for r in rules if r.get("state") == "firing")
    return Row(
        "stack",
        True,
        f"stack rules: {len(rules)} rules in {len(names)} group(s) loaded, none in error"
        f" ({firing} firing)",
    )


def stack_rows(base_url: str, fetch: Fetch = http_get) -> tuple[Row, Row]:
    return targets_row(base_url, fetch), rules_row(base_url, fetch)


__all__ = ["REQUIRED_JOBS", "judge_rules", "judge_targets", "stack_rows", "with_said"]
