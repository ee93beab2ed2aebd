"""Alertmanager's webhook JSON to notification text (vllm_ledger/notify/alerts.py): labels and
summaries are shown as they came, markup included; each platform's body neutralises it
(tests/unit/notify/platforms/)."""

from __future__ import annotations

from tests.unit.notify.platforms.hostile import ALERT, TEXT
from vllm_ledger.notify.alerts import parse_alerts


def test_markup_in_labels_and_summary_reaches_the_text_unchanged() -> None:
    assert TEXT == (
        "FIRING: QueueBuildUp\n"
        'instance=gpu1:8000 ledger_instance=<at user_id="all">x</at> model_name=<!channel> qwen '
        "severity=warning\n"
        "@all <@U0123ABC> <!subteam^S42> [docs](https://e.example) <https://e.example|runbook> "
        "& <#C42>\n"
    )


def test_control_characters_are_dropped_before_any_platform_sees_the_text() -> None:
    # a word joiner (format character) or a newline in a label is a space, so the joiner that
    # the platforms add is never one an alert brought
    labels = {**ALERT["labels"], "model_name": "a\u2060b\nc\u200bd"}
    (alert,) = parse_alerts({"version": "4", "alerts": [{**ALERT, "labels": labels}]}, "en")
    assert "model_name=a b c d " in alert.text
