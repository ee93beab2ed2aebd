"""The chat platforms' own outgoing requests, read without a relay: Slack's Events API and
DingTalk's outgoing robot. Each is verified, then turned into the same ``{message_id, text}``
command that ``POST /command`` takes, so one path (cursor, once-only, outbox) answers all.
Pure.

=====================  ===============================================  ==================
route                  signature (checked before the body is parsed)    message id
=====================  ===============================================  ==================
``/slack/events``      ``X-Slack-Signature: v0=`` hex HMAC-SHA256        ``slack:`` +
                       (signing secret, ``"v0:{ts}:{body}"``);           ``event_id``
                       ``X-Slack-Request-Timestamp`` (s) within 5 min
``/dingtalk/command``  ``sign:`` base64 HMAC-SHA256(app secret,          ``dingtalk:`` +
                       ``"{ts_ms}\\n{app secret}"``); ``timestamp`` (ms)  ``msgId``
                       within 1 h (DingTalk's own rule)
=====================  ===============================================  ==================

Slack: ``url_verification`` is answered with its challenge; an ``event_callback`` is read
when its event is an ``app_mention``, or a ``message`` in a direct message (``channel_type``
``im``); a message from a bot (``bot_id`` or any ``subtype``, our own replies included) and
every other event are acknowledged and dropped. DingTalk's sign covers only the timestamp,
not the body (the platform's design): the message id makes a replay within the hour do
nothing. The ``<@U…>`` / ``@name`` mention is stripped; nothing else of the text is kept.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass

from vllm_ledger.errors import LedgerError
from vllm_ledger.notify.signing import Verdict

SLACK_MAX_SKEW_S = 300.0
DINGTALK_MAX_SKEW_S = 3600.0
SLACK_TIMESTAMP_HEADER = "X-Slack-Request-Timestamp"
SLACK_SIGNATURE_HEADER = "X-Slack-Signature"
DINGTALK_TIMESTAMP_HEADER = "timestamp"
DINGTALK_SIGN_HEADER = "sign"
_TS_S = re.compile(r"^[0-9]{1,12}$")
_TS_MS = re.compile(r"^[0-9]{1,15}$")
_SLACK_MENTION = re.compile(r"<@[A-Z0-9]{1,64}(\|[^>]{0,200})?>")
_CHALLENGE = re.compile(r"^[\x21-\x7e]{1,200}$")


class NotACommand(LedgerError, ValueError):
    """A platform request that is valid but carries no command (acknowledged, dropped)."""


@dataclass(frozen=True)
class Challenge:
    """Slack's ``url_verification``: the answer is ``{"challenge": value}``."""

    value: str


def _compare(want: str, got: str | None) -> bool:
    return got is not None and hmac.compare_digest(want.encode(), got.encode("ascii", "replace"))


def slack_signature(secret: bytes, timestamp: str, body: bytes) -> str:
    mac = hmac.new(secret, b"v0:" + timestamp.encode("ascii") + b":" + body, hashlib.sha256)
    return "v0=" + mac.hexdigest()


def verify_slack(
    secret: bytes,
    timestamp: str | None,
    signature: str | None,
    body: bytes,
    *,
    now_ts: float,
    max_skew_s: float = SLACK_MAX_SKEW_S,
) -> Verdict:
    if timestamp is None or not _TS_S.fullmatch(timestamp):
        return "bad_timestamp"
    if abs(now_ts - int(timestamp)) > max_skew_s:
        return "old_timestamp"
    if not _compare(slack_signature(secret, timestamp, body), signature):
        return "bad_signature"
    return "ok"


def dingtalk_sign(secret: bytes, timestamp_ms: str) -> str:
    mac = hmac.new(secret, timestamp_ms.encode("ascii") + b"\n" + secret, hashlib.sha256)
    return base64.b64encode(mac.digest()).decode("ascii")


def verify_dingtalk(
    secret: bytes,
    timestamp_ms: str | None,
    sign: str | None,
    *,
    now_ts: float,
    max_skew_s: float = DINGTALK_MAX_SKEW_S,
) -> Verdict:
    if timestamp_ms is None or not _TS_MS.fullmatch(timestamp_ms):
        return "bad_timestamp"
    if abs(now_ts - int(timestamp_ms) / 1000.0) > max_skew_s:
        return "old_timestamp"
    if not _compare(dingtalk_sign(secret, timestamp_ms), sign):
        return "bad_signature"
    return "ok"


def slack_command(doc: object) -> dict[str, object] | Challenge:
    """A verified Slack request body -> a ``/command`` body, or the challenge to answer.
    Raises ``NotACommand`` for an event that is not for us, ``ValueError`` for a bad body."""
    if not isinstance(doc, dict):
        raise ValueError("not an object")
    kind = doc.get("type")
    if kind == "url_verification":
        challenge = doc.get("challenge")
        if not isinstance(challenge, str) or not _CHALLENGE.fullmatch(challenge):
            raise ValueError("challenge: 1-200 printable ASCII characters")
        return Challenge(challenge)
    if kind != "event_callback":
        raise NotACommand(f"type {kind!r}")
    event, event_id = doc.get("event"), doc.get("event_id")
    if not isinstance(event, dict) or not isinstance(event_id, str):
        raise ValueError("event_callback without event or event_id")
    if event.get("bot_id") is not None or event.get("subtype") is not None:
        raise NotACommand("a bot's message")
    etype = event.get("type")
    if not (etype == "app_mention" or (etype == "message" and event.get("channel_type") == "im")):
        raise NotACommand("not a mention or direct message")
    text = event.get("text")
    if not isinstance(text, str):
        raise ValueError("event.text: not a string")
    return {"message_id": f"slack:{event_id}", "text": _SLACK_MENTION.sub(" ", text)}


def dingtalk_command(doc: object) -> dict[str, object]:
    """A verified DingTalk outgoing-robot body -> a ``/command`` body."""
    if not isinstance(doc, dict):
        raise ValueError("not an object")
    mid, text = doc.get("msgId"), doc.get("text")
    content = text.get("content") if isinstance(text, dict) else None
    if not isinstance(mid, str) or not isinstance(content, str):
        raise ValueError("msgId and text.content are needed")
    conversation = doc.get("conversationId")
    if conversation is not None and not isinstance(conversation, str):
        raise ValueError("conversationId: not a string")
    return {"message_id": f"dingtalk:{mid}", "text": content}


__all__ = [
    "DINGTALK_MAX_SKEW_S",
    "SLACK_MAX_SKEW_S",
    "Challenge",
    "NotACommand",
    "dingtalk_command",
    "dingtalk_sign",
    "slack_command",
    "slack_signature",
    "verify_dingtalk",
    "verify_slack",
]
