"""One Alertmanager alert whose labels and summary carry every platform's mention and link
markup, read by ``notify.alerts`` as the notifier reads it: the text each platform test turns
into its body."""

from __future__ import annotations

from typing import Any

from vllm_ledger.notify.alerts import parse_alerts

ALERT: dict[str, Any] = {
    "status": "firing",
    "fingerprint": "0f1e2d3c4b5a6978",
    "startsAt": "2026-11-30T10:00:00Z",
    "labels": {
        "alertname": "QueueBuildUp",
        "instance": "gpu1:8000",
        "ledger_instance": '<at user_id="all">x</at>',
        "model_name": "<!channel> qwen",
        "severity": "warning",
    },
    "annotations": {
        "summary": "@all <@U0123ABC> <!subteam^S42> [docs](https://e.example) "
        "<https://e.example|runbook> & <#C42>",
    },
}
TEXT = parse_alerts({"version": "4", "alerts": [ALERT]}, "en")[0].text
