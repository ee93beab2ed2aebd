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
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_ledger import names
from vllm_ledger.errors import LedgerError

MAX_ALERTS = names.MAX_ALERTS_PER_POST
MAX_VALUE_CHARS = 120
SHOWN_LABELS = ("instance", "ledger_instance", "model_name", "severity", "job")
_FINGERPRINT = re.compile(r"^[0-9a-fA-F]{1,64}$")
_TIME = re.compile(r"^[0-9T:.+Z-]{10,40}$")


class BadAlerts(LedgerError, ValueError):
    """A body that is not Alertmanager's webhook JSON, version 4."""


@dataclass(frozen=True)
class Alert:
    key: str
    text: str


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


__all__ = ["MAX_ALERTS", "Alert", "BadAlerts", "parse_alerts"]
