"""Alertmanager's webhook JSON to notification text (vllm_ledger/notify/alerts.py): labels and
summaries are shown as they came, markup included; each platform's body neutralises it
(tests/unit/notify/platforms/). The note for alerts Alertmanager left out of a group
notification (``truncatedAlerts``): its words, its key, and its ``amtool`` command, which no
label value can add a word to."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from tests.unit.notify.platforms.hostile import ALERT, TEXT
from vllm_ledger.notify.alerts import BadAlerts, NotShown, parse_alerts, truncation_note


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


# ---- alerts Alertmanager left out (truncatedAlerts) ----------------------------------------


def _group(labels: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "version": "4",
        "groupKey": "{}:{}",
        "status": "firing",
        "groupLabels": labels,
        "truncatedAlerts": 2,
        "externalURL": "http://am.example:9093/",
        "alerts": [ALERT],
        **extra,
    }


def _note(doc: dict[str, Any], lang: str = "en") -> NotShown:
    note = truncation_note(doc, parse_alerts(doc, lang), lang)
    assert note is not None
    return note


def test_the_note_says_how_many_and_where_to_see_them_in_both_languages() -> None:
    doc = _group({"alertname": "QueueBuildUp", "instance": "gpu1:8000"})
    en, zh = _note(doc), _note(doc, "zh")
    assert en.count == zh.count == 2 and en.key == zh.key
    query = "%7Balertname%3D%22QueueBuildUp%22%2Cinstance%3D%22gpu1%3A8000%22%7D"
    amtool = (
        "amtool --alertmanager.url=http://am.example:9093 alert query "
        "'alertname=\"QueueBuildUp\"' 'instance=\"gpu1:8000\"'"
    )
    assert en.text == (
        "NOT SHOWN: 2 alerts of this group (Alertmanager sent 1 of 3: its max_alerts)\n"
        "group: alertname=QueueBuildUp instance=gpu1:8000\n"
        f"all of them: http://am.example:9093/#/alerts?filter={query}\n"
        f"or: {amtool}\n"
    )
    assert zh.text == (
        "小鲁班 · 告警未显示:本组 3 条告警中 2 条未显示"
        "(Alertmanager 每条通知最多带 1 条,max_alerts)\n"
        "分组:alertname=QueueBuildUp instance=gpu1:8000\n"
        f"全部告警:http://am.example:9093/#/alerts?filter={query}\n"
        f"或:{amtool}\n"
    )


def test_no_note_when_nothing_was_left_out() -> None:
    doc = _group({"alertname": "QueueBuildUp"}, truncatedAlerts=0)
    assert truncation_note(doc, parse_alerts(doc, "en"), "en") is None
    del doc["truncatedAlerts"]  # Alertmanager before 0.22 does not send the count
    assert truncation_note(doc, parse_alerts(doc, "en"), "en") is None


def test_the_key_is_the_group_notification_so_a_repeat_is_noted_once() -> None:
    doc = _group({"alertname": "QueueBuildUp"})
    key = _note(doc).key
    assert _note(json.loads(json.dumps(doc))).key == key  # Alertmanager's repeat
    assert _note({**doc, "truncatedAlerts": 3}).key != key  # more left out
    assert _note({**doc, "status": "resolved"}).key != key
    assert _note({**doc, "groupKey": '{}:{a="b"}'}).key != key  # another group
    other = {**ALERT, "fingerprint": "ab"}
    assert _note({**doc, "alerts": [other]}).key != key  # other alerts shown
    assert _note({**doc, "externalURL": "http://elsewhere:9093"}).key == key


def test_a_hostile_label_cannot_add_a_word_to_the_amtool_command() -> None:
    model = "q'; touch /tmp/owned; echo '$(id)\" \\"
    doc = _group({"alertname": "QueueBuildUp", "model_name": model})
    line = _note(doc).text.splitlines()[-1]
    assert line.startswith("or: amtool ")
    words = shlex.split(line[len("or: ") :])
    assert words == [
        "amtool",
        "--alertmanager.url=http://am.example:9093",
        "alert",
        "query",
        'alertname="QueueBuildUp"',
        'model_name="q\'; touch /tmp/owned; echo \'$(id)\\" \\\\"',
    ]


def test_a_cut_or_cleaned_label_widens_the_query_and_a_bad_address_is_left_out() -> None:
    long = "m" * 200
    doc = _group(
        {"alertname": "QueueBuildUp", "model_name": long, "job": "a\nb", "bad-name": "x"},
        externalURL="javascript:alert(1)",
    )
    text = _note(doc).text
    assert text.splitlines()[1] == f"group: alertname=QueueBuildUp job=a b model_name={'m' * 119}…"
    assert "all of them: in Alertmanager's UI\n" in text
    assert text.endswith("or: amtool alert query 'alertname=\"QueueBuildUp\"'\n")


@pytest.mark.parametrize("count", ["2", -1, True, 2.0, None, 10**10])
def test_a_count_that_is_not_alertmanagers_is_refused(count: object) -> None:
    doc = _group({"alertname": "QueueBuildUp"}, truncatedAlerts=count)
    with pytest.raises(BadAlerts, match="truncatedAlerts"):
        truncation_note(doc, parse_alerts(doc, "en"), "en")
