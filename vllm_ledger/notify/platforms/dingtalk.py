"""DingTalk: the custom robot (自定义机器人) out, the outgoing robot in. Pure.

=======  ===========================================================================
body     ``{"msgtype": "text", "text": {"content": T}}``, a word joiner after every
         ``@`` and ``<`` of T and inside ``](`` / ``][``; no ``at`` object (``isAtAll``
         false)
success  2xx and no non-zero ``errcode`` in the JSON
sign     in the query (加签): ``timestamp`` (ms) and ``sign`` = urlencoded
         base64(HMAC-SHA256(secret, ``"{timestamp_ms}\\n{secret}"``))
inbound  ``POST /dingtalk/command``: headers ``timestamp`` (ms) within 1 h (DingTalk's
         own rule) and ``sign`` = the same formula over the app secret; the message id
         is ``dingtalk:`` + ``msgId``, the text ``text.content``
=======  ===========================================================================

One formula signs both ways (``signature``). It covers the timestamp only, not the body (the
platform's design): the message id makes a replay within the hour do nothing.

A custom robot mentions people through the body's ``at`` object: ``isAtAll`` true pings the
whole group, ``atMobiles`` / ``atUserIds`` the people listed, each shown where the text says
``@138…`` (DingTalk's "自定义机器人发送群消息",
https://open.dingtalk.com/document/robots/custom-robot-access). The body never has one, so
``isAtAll`` is its default, false, and no list is ever built from the text; the word joiner
after ``@`` keeps ``@all`` / ``@所有人`` plain text, after ``<`` and in ``](`` no HTML or
``[text](url)`` link of a markdown message.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Any

from vllm_ledger.notify.platforms.base import (
    CommandBody,
    Inbound,
    Platform,
    Signed,
    error_code,
    joined,
)
from vllm_ledger.notify.signing import MILLISECONDS, Verdict, check, hmac_sha256_base64

MAX_SKEW_S = 3600.0
TIMESTAMP_HEADER = "timestamp"
SIGN_HEADER = "sign"
MARKUP = "@<"  # each is followed by a word joiner: no mention, no tag (links: unlinked)


def body(text: str) -> dict[str, Any]:
    return {"msgtype": "text", "text": {"content": joined(text, MARKUP)}}


def ok(status: int, answer: bytes) -> bool:
    return 200 <= status <= 299 and error_code(answer, ("errcode",)) is None


def signature(secret: bytes, timestamp_ms: str) -> str:
    """base64(HMAC-SHA256(secret, ``"{timestamp_ms}\\n{secret}"``)), before URL encoding."""
    return hmac_sha256_base64(secret, timestamp_ms.encode("ascii") + b"\n" + secret)


def sign(url: str, secret: str, now_ts: float) -> Signed:
    timestamp_ms = str(int(now_ts * 1000))
    quoted = urllib.parse.quote(signature(secret.encode(), timestamp_ms), safe="")
    return Signed(f"{url}{'&' if '?' in url else '?'}timestamp={timestamp_ms}&sign={quoted}")


def check_signature(
    secret: bytes,
    timestamp_ms: str | None,
    sign_value: str | None,
    *,
    now_ts: float,
    max_skew_s: float = MAX_SKEW_S,
) -> Verdict:
    return check(
        timestamp_ms,
        sign_value,
        lambda ts: signature(secret, ts),
        now_ts=now_ts,
        max_skew_s=max_skew_s,
        pattern=MILLISECONDS,
        per_second=1000,
    )


def verify(headers: Mapping[str, str], body: bytes, secret: bytes, now_ts: float) -> Verdict:
    return check_signature(
        secret, headers.get(TIMESTAMP_HEADER), headers.get(SIGN_HEADER), now_ts=now_ts
    )


def command(doc: object) -> CommandBody:
    """A verified outgoing-robot body -> a ``/command`` body (``ValueError`` for a bad one)."""
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


DINGTALK = Platform(
    "dingtalk",
    body,
    ok,
    sign,
    inbound=Inbound(
        route="/dingtalk/command",
        secret_file="dingtalk_app_secret_file",
        secret_env="VLLM_LEDGER_DINGTALK_APP_SECRET",
        verify=verify,
        parse=command,
        body_name="message",
    ),
)

__all__ = [
    "DINGTALK",
    "MARKUP",
    "MAX_SKEW_S",
    "SIGN_HEADER",
    "TIMESTAMP_HEADER",
    "body",
    "check_signature",
    "command",
    "ok",
    "sign",
    "signature",
    "verify",
]
