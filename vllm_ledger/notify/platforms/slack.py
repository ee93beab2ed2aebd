"""Slack: an app's Incoming Webhook out, its Events API in. Pure.

=======  ===========================================================================
body     ``{"text": T}``, T escaped: ``&`` -> ``&amp;``, ``<`` -> ``&lt;``, ``>`` ->
         ``&gt;`` (Slack's own rule for text that is not markup), and a word joiner
         after ``@`` and inside ``](`` / ``][``
success  2xx (an Incoming Webhook says no with its status: 400 ``invalid_payload``,
         403 ``action_prohibited``, 404 ``channel_not_found``, ...)
sign     none: the webhook's path is the secret
inbound  ``POST /slack/events``: ``X-Slack-Signature: v0=`` hex HMAC-SHA256(signing
         secret, ``"v0:{timestamp}:{body}"``), ``X-Slack-Request-Timestamp`` (s) within
         5 min; the message id is ``slack:`` + ``event_id``
=======  ===========================================================================

``url_verification`` is answered with its challenge; an ``event_callback`` is read when its
event is an ``app_mention``, or a ``message`` in a direct message (``channel_type`` ``im``);
a message from a bot (``bot_id`` or any ``subtype``, our own replies included) and every
other event are acknowledged and dropped. The ``<@U…>`` mention is stripped; nothing else of
the text is kept.

Out, nothing in the text is markup: Slack reads ``<!channel>``, ``<!here>``, ``<!everyone>``,
``<!subteam^ID>``, ``<@U…>``, ``<#C…>`` and ``<URL|text>`` only between ``<`` and ``>``, so
escaping the three characters Slack names ("Formatting text for app surfaces", Escaping:
https://api.slack.com/reference/surfaces/formatting#escaping) shows every one of them as text;
Slack shows ``&lt;`` as ``<`` again. The body never sets ``link_names`` (which asks Slack to
make a plain ``@channel`` a mention), and the word joiner after an ``@`` before a word keeps
it text even so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vllm_ledger.notify.platforms.base import (
    Challenge,
    CommandBody,
    Inbound,
    NotACommand,
    Platform,
    joined,
)
from vllm_ledger.notify.signing import Verdict, check, hmac_sha256_hex

MAX_SKEW_S = 300.0
TIMESTAMP_HEADER = "X-Slack-Request-Timestamp"
SIGNATURE_HEADER = "X-Slack-Signature"
_MENTION = re.compile(r"<@[A-Z0-9]{1,64}(\|[^>]{0,200})?>")
_CHALLENGE = re.compile(r"^[\x21-\x7e]{1,200}$")
_ESCAPES = {
    ord("&"): "&amp;",
    ord("<"): "&lt;",
    ord(">"): "&gt;",
}


def escape(text: str) -> str:
    """``text`` as Slack shows it and parses nothing of: no mention, no link, no ``<!date>``."""
    return joined(text.translate(_ESCAPES), "@")


def body(text: str) -> dict[str, Any]:
    return {"text": escape(text)}


def signature(secret: bytes, timestamp: str, body: bytes) -> str:
    """``X-Slack-Signature`` for ``body`` sent at ``timestamp`` (Unix seconds)."""
    return "v0=" + hmac_sha256_hex(secret, b"v0:" + timestamp.encode("ascii") + b":" + body)


def check_signature(
    secret: bytes,
    timestamp: str | None,
    signature_value: str | None,
    body: bytes,
    *,
    now_ts: float,
    max_skew_s: float = MAX_SKEW_S,
) -> Verdict:
    return check(
        timestamp,
        signature_value,
        lambda ts: signature(secret, ts, body),
        now_ts=now_ts,
        max_skew_s=max_skew_s,
    )


def verify(headers: Mapping[str, str], body: bytes, secret: bytes, now_ts: float) -> Verdict:
    return check_signature(
        secret,
        headers.get(TIMESTAMP_HEADER.lower()),
        headers.get(SIGNATURE_HEADER.lower()),
        body,
        now_ts=now_ts,
    )


def command(doc: object) -> CommandBody | Challenge:
    """A verified Events API body -> a ``/command`` body, or the challenge to answer.
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
    return {"message_id": f"slack:{event_id}", "text": _MENTION.sub(" ", text)}


SLACK = Platform(
    "slack",
    body,
    inbound=Inbound(
        route="/slack/events",
        secret_file="slack_signing_secret_file",
        secret_env="VLLM_LEDGER_SLACK_SIGNING_SECRET",
        verify=verify,
        parse=command,
        body_name="event",
    ),
)

__all__ = [
    "MAX_SKEW_S",
    "SIGNATURE_HEADER",
    "SLACK",
    "TIMESTAMP_HEADER",
    "body",
    "check_signature",
    "command",
    "escape",
    "signature",
    "verify",
]
