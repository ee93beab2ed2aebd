"""Alertmanager's webhook (JSON ``"version": "4"``) in, one notification per alert and status.

Each alert is keyed by ``fingerprint``, ``status`` and ``startsAt``: Alertmanager re-sends a
firing group every ``repeat_interval`` and after restarts, and each key is notified once
(``Store.queue_alert``). At most ``MAX_ALERTS`` alerts of one body are read (the generated
alertmanager.yml sends at most as many: ``max_alerts``). The text carries the alert's name,
status and a few labels and the summary, with control characters dropped and each value cut to
``MAX_VALUE_CHARS``. Those strings are not all ours: ``model_name`` and ``ledger_instance`` (and
the summaries that name them) come from a deployment host, and anyone who can write a label or
a rule can put ``<!channel>`` or ``<at user_id="all">`` in one. They are shown as text all the
same: each platform's ``body`` neutralises its own mention and link markup
(``notify/platforms``; docs/notifier.md, "Mentions and links").

Past ``max_alerts``, Alertmanager cuts a group's list and says how many it left out
(``truncatedAlerts``). Those alerts never reach us, so ``truncation_note`` turns the count into
one notification of its own: how many were not shown, the group's labels, and where to see them
all (Alertmanager's UI at the body's ``externalURL``, and ``amtool alert query``). Its key is
the group notification's content (group, status, the count and the keys of the alerts shown):
a repeat of the same notification is noted once, as its alerts are; a changed group is noted
again with its new count.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import unicodedata
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vllm_ledger import names
from vllm_ledger.errors import LedgerError
from vllm_ledger.strictjson import whole_in

MAX_ALERTS = names.MAX_ALERTS_PER_POST
MAX_VALUE_CHARS = 120
SHOWN_LABELS = ("instance", "ledger_instance", "model_name", "severity", "job")
_FINGERPRINT = re.compile(r"^[0-9a-fA-F]{1,64}$")
_TIME = re.compile(r"^[0-9T:.+Z-]{10,40}$")
_LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
_URL = re.compile(r"^https?://[\x21-\x7e]{1,200}$")
MAX_NOT_SHOWN = 10**9  # a count past this is not Alertmanager's


class BadAlerts(LedgerError, ValueError):
    """A body that is not Alertmanager's webhook JSON, version 4."""


@dataclass(frozen=True)
class Alert:
    key: str
    text: str


@dataclass(frozen=True)
class NotShown:
    """The note for the alerts Alertmanager left out of one group notification."""

    key: str
    text: str
    count: int  # alerts not shown (``truncatedAlerts``)


def _clean(value: object) -> str:
    text = value if isinstance(value, str) else ""
    text = "".join(c if unicodedata.category(c)[0] != "C" else " " for c in text).strip()
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _text(status: str, labels: Mapping[str, Any], annotations: Mapping[str, Any], lang: str) -> str:
    name = _clean(labels.get("alertname")) or "?"
    if lang == "zh":
        head = f"小鲁班 · 告警{'触发' if status == 'firing' else '解除'}:{name}"
    else:
        head = f"{'FIRING' if status == 'firing' else 'RESOLVED'}: {name}"
    parts = [f"{k}={_clean(labels[k])}" for k in SHOWN_LABELS if _clean(labels.get(k))]
    lines = [head]
    if parts:
        lines.append(" ".join(parts))
    summary = _clean(annotations.get("summary"))
    if summary:
        lines.append(summary)
    return "\n".join(lines) + "\n"


def parse_alerts(doc: object, lang: str = "zh") -> list[Alert]:
    """The alerts of one webhook body, in order; ``BadAlerts`` when it is not one."""
    if not isinstance(doc, dict) or doc.get("version") != "4":
        raise BadAlerts("not Alertmanager webhook JSON version 4")
    alerts = doc.get("alerts")
    if not isinstance(alerts, list):
        raise BadAlerts("alerts: not a list")
    out = []
    for a in alerts[:MAX_ALERTS]:
        if not isinstance(a, dict):
            raise BadAlerts("alert: not an object")
        status, fp, starts = a.get("status"), a.get("fingerprint"), a.get("startsAt")
        labels, annotations = a.get("labels", {}), a.get("annotations", {})
        if status not in ("firing", "resolved"):
            raise BadAlerts("alert.status: firing or resolved")
        if not isinstance(fp, str) or not _FINGERPRINT.fullmatch(fp):
            raise BadAlerts("alert.fingerprint: hex")
        if not isinstance(starts, str) or not _TIME.fullmatch(starts):
            raise BadAlerts("alert.startsAt: a time")
        if not isinstance(labels, dict) or not isinstance(annotations, dict):
            raise BadAlerts("alert.labels/annotations: objects")
        out.append(Alert(f"alert:{fp}|{status}|{starts}", _text(status, labels, annotations, lang)))
    return out


def _group_labels(doc: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """The group's labels as shown (each value cleaned and cut), and those that can select the
    group exactly (a value that had to be cleaned or cut is left out: the query then shows a
    wider set, never a narrower one)."""
    labels = doc.get("groupLabels", {})
    if not isinstance(labels, dict):
        raise BadAlerts("groupLabels: an object")
    shown, exact = {}, {}
    for name in sorted(labels):
        value = _clean(labels[name])
        if not _LABEL_NAME.fullmatch(name) or not value:
            continue
        shown[name] = value
        if value == labels[name]:
            exact[name] = value
    return shown, exact


def not_shown_count(doc: Mapping[str, Any]) -> int:
    """``truncatedAlerts`` of a webhook body: 0 when absent (Alertmanager before 0.22)."""
    n = doc.get("truncatedAlerts", 0)
    if not whole_in(n, 0, MAX_NOT_SHOWN):
        raise BadAlerts("truncatedAlerts: a count")
    return n


def _escape(value: str) -> str:
    """A label value inside a matcher's double quotes."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _where(url: str, exact: Mapping[str, str]) -> tuple[str, str]:
    """Alertmanager's UI filtered to the group, and the ``amtool`` command that lists it (each
    matcher shell-quoted: a label value cannot add a word to the command)."""
    matchers = [f'{k}="{_escape(v)}"' for k, v in exact.items()]
    query = urllib.parse.quote("{" + ",".join(matchers) + "}")
    ui = f"{url}/#/alerts?filter={query}" if url else ""
    words = ["amtool", *([f"--alertmanager.url={url}"] if url else []), "alert", "query"]
    return ui, " ".join(shlex.quote(w) for w in [*words, *matchers])


def _not_shown_text(
    count: int, shown: int, labels: Mapping[str, str], where: tuple[str, str], lang: str
) -> str:
    group = " ".join(f"{k}={v}" for k, v in labels.items())
    ui, amtool = where
    total = count + shown
    if lang == "zh":
        lines = [
            f"小鲁班 · 告警未显示:本组 {total} 条告警中 {count} 条未显示"
            f"(Alertmanager 每条通知最多带 {shown} 条,max_alerts)",
            f"分组:{group}" if group else "",
            f"全部告警:{ui}" if ui else "全部告警:见 Alertmanager 的界面",
            f"或:{amtool}",
        ]
    else:
        lines = [
            f"NOT SHOWN: {count} alerts of this group "
            f"(Alertmanager sent {shown} of {total}: its max_alerts)",
            f"group: {group}" if group else "",
            f"all of them: {ui}" if ui else "all of them: in Alertmanager's UI",
            f"or: {amtool}",
        ]
    return "\n".join(line for line in lines if line) + "\n"


def truncation_note(doc: object, shown: Sequence[Alert], lang: str = "zh") -> NotShown | None:
    """The note for the alerts Alertmanager left out of this body (``truncatedAlerts``), or
    None when it left out none. Call it on a body ``parse_alerts`` took; ``BadAlerts`` for a
    count, group or address that is not Alertmanager's."""
    if not isinstance(doc, dict):
        raise BadAlerts("not Alertmanager webhook JSON version 4")
    count = not_shown_count(doc)
    if count == 0:
        return None
    labels, exact = _group_labels(doc)
    url = doc.get("externalURL", "")
    url = url.rstrip("/") if isinstance(url, str) and _URL.fullmatch(url) else ""
    group_key, status = doc.get("groupKey", ""), doc.get("status", "")
    identity = json.dumps(
        [
            group_key if isinstance(group_key, str) else "",
            status if isinstance(status, str) else "",
            count,
            sorted(a.key for a in shown),
        ]
    )
    key = "not_shown:" + hashlib.sha256(identity.encode("utf-8", "replace")).hexdigest()[:32]
    text = _not_shown_text(count, len(shown), labels, _where(url, exact), lang)
    return NotShown(key, text, count)


__all__ = [
    "MAX_ALERTS",
    "Alert",
    "BadAlerts",
    "NotShown",
    "not_shown_count",
    "parse_alerts",
    "truncation_note",
]
