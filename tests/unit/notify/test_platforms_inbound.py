"""Slack's and DingTalk's own outgoing requests, read by ``notify/platforms/``: the signatures
(checked against each platform's documented formula, computed here independently), the
bodies turned into commands, and the secrets read from files or the environment."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path
from typing import Any

import pytest

from vllm_ledger.notify.chat import parse_request
from vllm_ledger.notify.config import notifier_config
from vllm_ledger.notify.platforms.base import Challenge, NotACommand
from vllm_ledger.notify.platforms.dingtalk import check_signature as verify_dingtalk
from vllm_ledger.notify.platforms.dingtalk import command as dingtalk_command
from vllm_ledger.notify.platforms.slack import check_signature as verify_slack
from vllm_ledger.notify.platforms.slack import command as slack_command

NOW = 1_764_400_000.0
SLACK = b"8f742231b10e8888abcd99yyyzzz85a5"
DING = b"SECabcdef0123456789"


def _slack_sig(ts: str, body: bytes, secret: bytes = SLACK) -> str:
    base = b"v0:" + ts.encode() + b":" + body
    return "v0=" + hmac.new(secret, base, hashlib.sha256).hexdigest()


def _ding_sign(ts_ms: str, secret: bytes = DING) -> str:
    mac = hmac.new(secret, f"{ts_ms}\n{secret.decode()}".encode(), hashlib.sha256).digest()
    return base64.b64encode(mac).decode()


def test_slack_signature_is_checked_with_its_timestamp() -> None:
    body = b'{"type":"event_callback"}'
    ts = str(int(NOW))
    assert verify_slack(SLACK, ts, _slack_sig(ts, body), body, now_ts=NOW) == "ok"
    assert verify_slack(SLACK, ts, _slack_sig(ts, body + b" "), body, now_ts=NOW) == (
        "bad_signature"
    )
    assert verify_slack(SLACK, ts, _slack_sig(ts, body, b"other"), body, now_ts=NOW) == (
        "bad_signature"
    )
    assert verify_slack(SLACK, ts, None, body, now_ts=NOW) == "bad_signature"
    old = str(int(NOW) - 301)
    assert verify_slack(SLACK, old, _slack_sig(old, body), body, now_ts=NOW) == "old_timestamp"
    ahead = str(int(NOW) + 301)
    assert verify_slack(SLACK, ahead, _slack_sig(ahead, body), body, now_ts=NOW) == (
        "old_timestamp"
    )
    assert verify_slack(SLACK, "12.5", "v0=00", body, now_ts=NOW) == "bad_timestamp"
    assert verify_slack(SLACK, None, "v0=00", body, now_ts=NOW) == "bad_timestamp"


def test_dingtalk_sign_is_checked_with_its_millisecond_timestamp() -> None:
    ts = str(int(NOW * 1000))
    assert verify_dingtalk(DING, ts, _ding_sign(ts), now_ts=NOW) == "ok"
    assert verify_dingtalk(DING, ts, _ding_sign(ts, b"SECother"), now_ts=NOW) == "bad_signature"
    assert verify_dingtalk(DING, ts, None, now_ts=NOW) == "bad_signature"
    within = str(int((NOW - 3500) * 1000))
    assert verify_dingtalk(DING, within, _ding_sign(within), now_ts=NOW) == "ok"
    old = str(int((NOW - 3601) * 1000))
    assert verify_dingtalk(DING, old, _ding_sign(old), now_ts=NOW) == "old_timestamp"
    assert verify_dingtalk(DING, "abc", "x", now_ts=NOW) == "bad_timestamp"


def _event(event: dict[str, Any], event_id: str = "Ev01ABC") -> dict[str, Any]:
    return {"type": "event_callback", "event_id": event_id, "event": event}


def test_slack_bodies_become_commands_or_are_dropped() -> None:
    assert slack_command({"type": "url_verification", "challenge": "3eZbrw1aBm"}) == Challenge(
        "3eZbrw1aBm"
    )
    cmd = slack_command(_event({"type": "app_mention", "text": "<@U061F7AUR> status"}))
    assert cmd == {"message_id": "slack:Ev01ABC", "text": "  status"}
    req = parse_request(cmd)
    assert (req.message_id, req.command, req.lang) == ("slack:Ev01ABC", "status", "en")
    named = slack_command(_event({"type": "app_mention", "text": "<@U061F7AUR|bot> 状态"}))
    assert parse_request(named).command == "status"
    dm = slack_command(_event({"type": "message", "channel_type": "im", "text": "help"}))
    assert parse_request(dm).command == "help"
    for dropped in (
        {"type": "message", "channel_type": "channel", "text": "status"},  # not for us
        {"type": "message", "channel_type": "im", "bot_id": "B1", "text": "Status"},  # a bot
        {"type": "message", "channel_type": "im", "subtype": "bot_message", "text": "x"},
        {"type": "reaction_added"},
    ):
        with pytest.raises(NotACommand):
            slack_command(_event(dropped))
    with pytest.raises(NotACommand):
        slack_command({"type": "app_rate_limited"})
    bad: object
    for bad in (
        [],
        {"type": "url_verification", "challenge": "has space"},
        {"type": "event_callback", "event": {"type": "app_mention", "text": "status"}},
        _event({"type": "app_mention", "text": 5}),
    ):
        with pytest.raises(ValueError):
            slack_command(bad)


def test_dingtalk_bodies_become_commands() -> None:
    doc = {
        "msgtype": "text",
        "msgId": "msgABC123==",
        "conversationId": "cid1",
        "text": {"content": " status"},
    }
    cmd = dingtalk_command(doc)
    assert cmd == {"message_id": "dingtalk:msgABC123==", "text": " status"}
    assert parse_request(cmd).command == "status"
    for bad in ({}, {"msgId": "m", "text": "status"}, {**doc, "conversationId": 7}, "x"):
        with pytest.raises(ValueError):
            dingtalk_command(bad)


def test_platform_secrets_come_from_files_or_the_environment(tmp_path: Path) -> None:
    (tmp_path / "slack").write_text("s3cret\n")
    doc = {"usage": {}, "notifier": {"slack_signing_secret_file": "slack"}}
    env = {"VLLM_LEDGER_COMMAND_SECRET": "c", "VLLM_LEDGER_DINGTALK_APP_SECRET": "SECd"}
    cfg = notifier_config(doc, tmp_path / "private.json", env)
    assert cfg.slack_signing_secret == b"s3cret" and cfg.dingtalk_app_secret == b"SECd"
    assert "s3cret" not in repr(cfg) and "SECd" not in repr(cfg)
    bare = notifier_config(
        {"usage": {}}, tmp_path / "private.json", {"VLLM_LEDGER_COMMAND_SECRET": "c"}
    )
    assert bare.slack_signing_secret is None and bare.dingtalk_app_secret is None
