"""One notification to one chat webhook: the platform's message JSON, one POST, an outcome.

Every body is built here, from each platform's documented custom bot webhook format, and
posted to the URL the platform gives you, as is, through the one HTTP client
(``vllm_ledger.http.client``). The generic JSON webhook's body is apprise's ``json://`` format;
a ``json://`` / ``jsons://`` URL is taken as ``http://`` / ``https://`` (apprise's URL options,
``+header`` and the like, are not read).

=========  ==================================================  ============================
platform   body                                                success
=========  ==================================================  ============================
feishu     ``{"msg_type": "text", "content": {"text": T}}``    2xx and ``code`` 0
lark       (same; Lark is Feishu's international edition)      2xx and ``code`` 0
dingtalk   ``{"msgtype": "text", "text": {"content": T}}``     2xx and ``errcode`` 0
wecom      ``{"msgtype": "text", "text": {"content": T}}``     2xx and ``errcode`` 0
slack      ``{"text": T}``                                     2xx
json       ``{"version", "title", "message", "attachments",    2xx
           "type"}`` (apprise's ``json://`` format)
=========  ==================================================  ============================

Signing: Feishu/Lark add ``timestamp`` and ``sign`` = base64(HMAC-SHA256(key
``"{ts}\\n{secret}"``, empty message)) to the body; DingTalk adds ``timestamp`` (ms) and
``sign`` = urlencoded base64(HMAC-SHA256(secret, ``"{ts_ms}\\n{secret}"``)) to the query.

The whole request has one deadline, ``timeout_s`` (the notifier's ``deliver_timeout_s``):
connect, send, headers and answer, so a webhook that drips its answer is cut there and the
delivery is ``timeout``. Redirects are not followed (a 3xx is ``http_status``). The answer is
read at most 64 KiB and only its HTTP status and the platform's integer error code are kept:
no remote text.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from vllm_ledger.errors import RemoteError, RemoteTimeout
from vllm_ledger.http import client

MAX_ANSWER_BYTES = 64 * 1024
Reason = Literal["timeout", "http_status", "connection", "platform_error", "no_webhook"]
REASONS: tuple[str, ...] = (
    "timeout",
    "http_status",
    "connection",
    "platform_error",
    "no_webhook",
    "interrupted",
)


@dataclass(frozen=True)
class Outcome:
    """``sent``, or ``failed`` with a reason from ``REASONS`` and the HTTP status if any."""

    ok: bool
    reason: str | None = None
    http_status: int | None = None


def payload(platform: str, text: str, secret: str | None, now_ts: float) -> dict[str, Any]:
    """The JSON body for ``platform``."""
    if platform in ("feishu", "lark"):
        body: dict[str, Any] = {"msg_type": "text", "content": {"text": text}}
        if secret:
            ts = str(int(now_ts))
            mac = hmac.new(f"{ts}\n{secret}".encode(), b"", hashlib.sha256).digest()
            body.update(timestamp=ts, sign=base64.b64encode(mac).decode())
        return body
    if platform in ("dingtalk", "wecom"):
        return {"msgtype": "text", "text": {"content": text}}
    if platform == "slack":
        return {"text": text}
    if platform == "json":  # what apprise's json:// plugin sends
        return {"version": "1.0", "title": "", "message": text, "attachments": [], "type": "info"}
    raise ValueError(f"no payload for {platform!r}")


def dingtalk_url(url: str, secret: str | None, now_ts: float) -> str:
    if not secret:
        return url
    ts = str(int(now_ts * 1000))
    mac = hmac.new(secret.encode(), f"{ts}\n{secret}".encode(), hashlib.sha256).digest()
    sign = urllib.parse.quote(base64.b64encode(mac).decode(), safe="")
    return f"{url}{'&' if '?' in url else '?'}timestamp={ts}&sign={sign}"


def _platform_code(platform: str, answer: bytes) -> int | None:
    """The platform's own error code in a 2xx answer (0 or absent: accepted)."""
    if platform not in ("feishu", "lark", "dingtalk", "wecom"):
        return None
    try:
        doc = json.loads(answer.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    for key in ("code", "errcode", "StatusCode"):
        v = doc.get(key)
        if type(v) is int and v != 0:
            return v
    return None


def send(
    platform: str,
    url: str | None,
    text: str,
    *,
    secret: str | None = None,
    timeout_s: float = 5.0,
    clock: Callable[[], float] = time.time,
) -> Outcome:
    """Deliver ``text`` once. Never retries: the outbox decides what happens next."""
    if not url:
        return Outcome(False, "no_webhook")
    if platform == "json":
        url = _generic_url(url)
    if platform == "dingtalk":
        url = dingtalk_url(url, secret, clock())
    body = json.dumps(payload(platform, text, secret, clock()), ensure_ascii=False).encode()
    try:
        answer = client.post(
            url,
            body,
            headers={"Content-Type": "application/json; charset=utf-8"},
            deadline_s=timeout_s,
            max_bytes=MAX_ANSWER_BYTES,
            truncate=True,
        )
    except RemoteTimeout:
        return Outcome(False, "timeout")
    except RemoteError:
        return Outcome(False, "connection")
    if not 200 <= answer.status <= 299:
        return Outcome(False, "http_status", answer.status)
    if _platform_code(platform, answer.body) is not None:
        return Outcome(False, "platform_error", answer.status)
    return Outcome(True, None, answer.status)


def _generic_url(url: str) -> str:
    """``json://`` -> ``http://``, ``jsons://`` -> ``https://`` (apprise's names for them)."""
    scheme, sep, rest = url.partition("://")
    return {"json": "http", "jsons": "https"}.get(scheme.lower(), scheme) + sep + rest


__all__ = [
    "REASONS",
    "Outcome",
    "dingtalk_url",
    "payload",
    "send",
]
