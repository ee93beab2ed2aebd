"""Slack's and DingTalk's own outgoing requests, straight to the notifier (no relay): the
notifier runs as its own process, the fake platform (a real HTTP server on 127.0.0.1) signs
each request the way the platform does and records the replies the outbox posts.

As in ``test_notifier_delivery``, the usage target is an SSH alias whose port is closed, so a
status reply is ready at once ("unreachable" figures are all it needs here)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from devtools.ports import free_port
from tests.e2e.notifier_fakes import (
    DINGTALK_SECRET,
    SECRET,
    SLACK_SECRET,
    FakePlatform,
    NotifierProc,
    send_command,
    send_dingtalk,
    send_slack,
    wait_for,
    write_config,
)

pytestmark = pytest.mark.e2e


def _start(tmp_path: Path, platform: FakePlatform, kind: str) -> NotifierProc:
    closed = free_port()
    (tmp_path / "ssh_config").write_text(
        f"Host closed\n  HostName 127.0.0.1\n  Port {closed}\n  User nobody\n"
        "  StrictHostKeyChecking yes\n  UserKnownHostsFile /dev/null\n"
    )
    (tmp_path / "webhook_url").write_text(platform.hook_url + "\n")
    (tmp_path / "slack_signing_secret").write_text(SLACK_SECRET.decode() + "\n")
    port = free_port()
    config = write_config(
        tmp_path / "private.json",
        {str(free_port()): {"target": "closed", "code_dir": "/srv/code", "data_dir": "/srv/u"}},
        {
            "listen": f"127.0.0.1:{port}",
            "platform": kind,
            "lang": "en",
            "ssh_config": "ssh_config",
            "webhook_url_file": "webhook_url",
            "slack_signing_secret_file": "slack_signing_secret",  # from a file ...
            "poll_interval_s": 30,
            "startup_wait_s": 5,
            "deliver_timeout_s": 10,  # room for the fake platform's answer on a loaded machine
        },
    )
    env = {
        "VLLM_LEDGER_COMMAND_SECRET": SECRET.decode(),
        "VLLM_LEDGER_DINGTALK_APP_SECRET": DINGTALK_SECRET.decode(),  # ... or the environment
    }
    return NotifierProc(config, env, port).start()


def _mention(event_id: str, text: str) -> dict[str, object]:
    return {
        "type": "event_callback",
        "team_id": "T0001",
        "event_id": event_id,
        "event_time": int(time.time()),
        "event": {
            "type": "app_mention",
            "user": "U0LAN0Z89",
            "text": f"<@U0BOT1234> {text}",
            "channel": "C0LAN2Q65",
            "ts": "1515449522.000016",
        },
    }


def test_slack_events_are_verified_answered_once_and_replied_through_the_outbox(
    tmp_path: Path, platform: FakePlatform
) -> None:
    n = _start(tmp_path, platform, "slack")
    try:
        code, doc = send_slack(n.port, {"type": "url_verification", "challenge": "3eZbrw1aB"})
        assert (code, doc) == (200, {"challenge": "3eZbrw1aB"})
        assert send_slack(n.port, _mention("Ev0PV52K21", "status")) == (
            200,
            {"status": "accepted", "seq": 1},
        )
        reply = wait_for("the status reply", lambda: [p for p in platform.posts if "Status" in p])
        assert "deployments 1" in reply[0]
        # Slack's retry of the same event, and another route's replay of it: nothing
        assert send_slack(n.port, _mention("Ev0PV52K21", "status")) == (
            200,
            {"status": "duplicate"},
        )
        assert send_command(n.port, "slack:Ev0PV52K21", "@bot status")[0] == 200
        bad = send_slack(n.port, _mention("Ev0BAD", "status"), bad_signature=True)
        assert bad == (401, {"error": "bad_signature"})
        old = send_slack(n.port, _mention("Ev0OLD", "status"), ts=int(time.time()) - 301)
        assert old == (401, {"error": "old_timestamp"})
        wrong = send_slack(n.port, _mention("Ev0WRONG", "status"), secret=b"not-the-secret")
        assert wrong[0] == 401
        # our own reply coming back as a bot message is acknowledged and dropped
        echo = _mention("Ev0ECHO", "Status")
        echo["event"] = {"type": "message", "channel_type": "im", "bot_id": "B1", "text": "x"}
        assert send_slack(n.port, echo) == (200, {"status": "ignored"})
        time.sleep(1.0)  # room for a reply that must not come
        assert len(platform.posts) == 1, platform.posts
        assert platform.raw[0][1] == {"text": reply[0]}  # Slack's incoming-webhook body
        st = n.status()
        assert st["cursor"] == 1 and st["deliveries"]["sent"] == 1
    finally:
        n.stop()
    log = n.log.read_text()
    assert "refused /slack/events: bad_signature" in log
    assert SLACK_SECRET.decode() not in log


def test_dingtalk_outgoing_robot_is_verified_and_answered_once(
    tmp_path: Path, platform: FakePlatform
) -> None:
    n = _start(tmp_path, platform, "dingtalk")
    msg = {
        "msgtype": "text",
        "msgId": "msgHuvWg0C9U0K5ODc0dx6F3Q==",
        "conversationId": "cidaa2DlPhjqfV1Z5mjfnLvtA==",
        "senderNick": "ops",
        "isInAtList": True,
        "text": {"content": " status"},
    }
    try:
        assert send_dingtalk(n.port, msg) == (200, {"status": "accepted", "seq": 1})
        reply = wait_for("the status reply", lambda: [p for p in platform.posts if "Status" in p])
        assert "deployments 1" in reply[0]
        assert platform.raw[0][1] == {"msgtype": "text", "text": {"content": reply[0]}}
        assert send_dingtalk(n.port, msg) == (200, {"status": "duplicate"})
        other = {**msg, "msgId": "msgOTHER=="}
        assert send_dingtalk(n.port, other, secret=b"SECwrong") == (
            401,
            {"error": "bad_signature"},
        )
        old_ms = int((time.time() - 3601) * 1000)
        assert send_dingtalk(n.port, other, ts_ms=old_ms) == (401, {"error": "old_timestamp"})
        time.sleep(1.0)
        assert len(platform.posts) == 1, platform.posts
        assert n.status()["cursor"] == 1
    finally:
        n.stop()
    assert DINGTALK_SECRET.decode() not in n.log.read_text()
