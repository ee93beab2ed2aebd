"""Slack (vllm_ledger/notify/platforms/slack.py): the Incoming Webhook's body and status rule,
and the Events API's requests: the ``v0`` signature against the example in Slack's
"Verifying requests from Slack", the 5 minute window, and event bodies to commands."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.notify.platforms.hostile import TEXT
from vllm_ledger.notify.platforms import slack
from vllm_ledger.notify.platforms.base import Challenge, NotACommand

# Slack's documented example: signing secret, X-Slack-Request-Timestamp, body, signature
SECRET = b"8f742231b10e8888abcd99yyyzzz85a5"
TS = "1531420618"
BODY = (
    b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&"
    b"channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&"
    b"command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2F"
    b"commands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&"
    b"trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
)
SIGNATURE = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"


def test_the_body_is_text_and_success_is_the_status() -> None:
    assert slack.SLACK.body("hi") == {"text": "hi"}
    assert slack.SLACK.sign is None
    assert slack.SLACK.ok(200, b"ok")
    assert slack.SLACK.ok(200, b'{"code": 5}')  # only the status says no
    assert not slack.SLACK.ok(400, b"invalid_payload")
    assert not slack.SLACK.ok(403, b"action_prohibited")
    assert not slack.SLACK.ok(404, b"channel_not_found")


def _verify(headers: dict[str, str], body: bytes = BODY, now_ts: float = 1531420618.0) -> str:
    inbound = slack.SLACK.inbound
    assert inbound is not None
    return inbound.verify(headers, body, SECRET, now_ts)


def test_the_signature_is_slacks_documented_example() -> None:
    assert slack.signature(SECRET, TS, BODY) == SIGNATURE
    # header names as the server hands them over: in lower case
    good = {"x-slack-request-timestamp": TS, "x-slack-signature": SIGNATURE}
    assert _verify(good) == "ok"
    assert _verify(good, now_ts=1531420618.0 + 300) == "ok"
    assert _verify(good, now_ts=1531420618.0 + 301) == "old_timestamp"
    assert _verify(good, now_ts=1531420618.0 - 301) == "old_timestamp"
    assert _verify(good, BODY + b"&x=1") == "bad_signature"
    assert _verify({**good, "x-slack-signature": SIGNATURE.upper()}) == "bad_signature"
    assert _verify({"x-slack-request-timestamp": TS}) == "bad_signature"
    assert _verify({"x-slack-signature": SIGNATURE}) == "bad_timestamp"
    assert _verify({**good, "x-slack-request-timestamp": "1531420618.0"}) == "bad_timestamp"


def _event(event: dict[str, Any], event_id: str = "Ev01ABC") -> dict[str, Any]:
    return {"type": "event_callback", "event_id": event_id, "event": event}


def test_events_become_commands_challenges_or_nothing() -> None:
    inbound = slack.SLACK.inbound
    assert inbound is not None
    assert (inbound.route, inbound.secret_file, inbound.body_name) == (
        "/slack/events",
        "slack_signing_secret_file",
        "event",
    )
    parse = inbound.parse
    assert parse({"type": "url_verification", "challenge": "3eZbrw1aBm"}) == Challenge("3eZbrw1aBm")
    mention = _event({"type": "app_mention", "text": "<@U061F7AUR|bot> status"})
    assert parse(mention) == {"message_id": "slack:Ev01ABC", "text": "  status"}
    dm = _event({"type": "message", "channel_type": "im", "text": "help"}, "Ev02")
    assert parse(dm) == {"message_id": "slack:Ev02", "text": "help"}
    for dropped in (
        _event({"type": "message", "channel_type": "channel", "text": "status"}),
        _event({"type": "app_mention", "bot_id": "B1", "text": "status"}),
        _event({"type": "message", "channel_type": "im", "subtype": "bot_message", "text": "x"}),
        {"type": "app_rate_limited"},
    ):
        with pytest.raises(NotACommand):
            parse(dropped)
    for bad in (
        "status",
        {"type": "url_verification", "challenge": "has space"},
        {"type": "event_callback", "event": {"type": "app_mention", "text": "status"}},
        _event({"type": "app_mention", "text": None}),
    ):
        with pytest.raises(ValueError):
            parse(bad)


def test_mentions_and_links_from_an_alert_are_escaped_as_slack_documents() -> None:
    # Slack's own escaping (& < >): no <!channel>, <@U…>, <!subteam^…>, <#C…> or <url|text>
    # is left; Slack shows each as the text it was. A word joiner follows @, and sits in ](.
    assert slack.SLACK.body(TEXT) == {
        "text": "FIRING: QueueBuildUp\n"
        'instance=gpu1:8000 ledger_instance=&lt;at user_id="all"&gt;x&lt;/at&gt; '
        "model_name=&lt;!channel&gt; qwen severity=warning\n"
        "@\u2060all &lt;@\u2060U0123ABC&gt; &lt;!subteam^S42&gt; [docs]\u2060(https://e.example) "
        "&lt;https://e.example|runbook&gt; &amp; &lt;#C42&gt;\n"
    }
    assert slack.SLACK.body("<!here> <!everyone> a&amp;b") == {
        "text": "&lt;!here&gt; &lt;!everyone&gt; a&amp;amp;b"
    }
