"""One notification to one chat webhook: the platform's message JSON, one POST, an outcome.

Feishu/Lark, DingTalk, WeCom and Slack are built here from each platform's documented custom
bot webhook format: apprise (installed with the ``notifier`` extra) has plugins for all four,
but each posts to the platform's fixed host (``open.feishu.cn``, ``oapi.dingtalk.com``,
``qyapi.weixin.qq.com``, ``hooks.slack.com``), so it can neither take the URL the platform
gives you as is nor be tested against a server on 127.0.0.1. The generic JSON webhook goes
through apprise's ``json://`` / ``jsons://`` plugin (an ``http(s)://`` URL is taken as one).

=========  ==================================================  ============================
platform   body                                                success
=========  ==================================================  ============================
feishu     ``{"msg_type": "text", "content": {"text": T}}``    2xx and ``code`` 0
lark       (same; Lark is Feishu's international edition)      2xx and ``code`` 0
dingtalk   ``{"msgtype": "text", "text": {"content": T}}``     2xx and ``errcode`` 0
wecom      ``{"msgtype": "text", "text": {"content": T}}``     2xx and ``errcode`` 0
slack      ``{"text": T}``                                     2xx
json       apprise: ``{"version", "title", "message", "type"}``  2xx
=========  ==================================================  ============================

Signing: Feishu/Lark add ``timestamp`` and ``sign`` = base64(HMAC-SHA256(key
``"{ts}\\n{secret}"``, empty message)) to the body; DingTalk adds ``timestamp`` (ms) and
``sign`` = urlencoded base64(HMAC-SHA256(secret, ``"{ts_ms}\\n{secret}"``)) to the query.

The whole request has one deadline (connect, send, answer); the answer is read at most 64 KiB
and only its HTTP status and the platform's integer error code are kept: no remote text.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import http.client
import json
import re
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

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
    """The JSON body for ``platform`` (not ``json``: apprise builds that one)."""
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
    raise ValueError(f"no payload of our own for {platform!r}")


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


def post_json(
    url: str, body: bytes, *, timeout_s: float, headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    """POST ``body``; (HTTP status, at most 64 KiB of the answer). One deadline for all of
    it: a watchdog shuts the socket when it passes (raises ``TimeoutError``)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("not an http(s) URL")
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(
            parts.hostname, parts.port, timeout=timeout_s, context=ssl.create_default_context()
        )
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout_s)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    began = time.monotonic()
    cut = threading.Event()
    watchdog: threading.Timer | None = None
    try:
        conn.connect()
        watchdog = threading.Timer(
            max(0.0, timeout_s - (time.monotonic() - began)), _cut, (conn.sock, cut)
        )
        watchdog.daemon = True
        watchdog.start()
        conn.request(
            "POST",
            path,
            body=body,
            headers={
                "Content-Type": "application/json; charset=utf-8",
                "Connection": "close",
                **(headers or {}),
            },
        )
        resp = conn.getresponse()
        answer = resp.read(MAX_ANSWER_BYTES)
        status = resp.status
    except (OSError, http.client.HTTPException) as exc:
        if cut.is_set() or isinstance(exc, (socket.timeout, TimeoutError)):
            raise TimeoutError from exc
        raise
    finally:
        if watchdog is not None:
            watchdog.cancel()
        conn.close()
    if cut.is_set():
        raise TimeoutError
    return status, answer


def _cut(sock: socket.socket | None, cut: threading.Event) -> None:
    cut.set()
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


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
        return _send_apprise(url, text, timeout_s)
    if platform == "dingtalk":
        url = dingtalk_url(url, secret, clock())
    body = json.dumps(payload(platform, text, secret, clock()), ensure_ascii=False).encode()
    try:
        status, answer = post_json(url, body, timeout_s=timeout_s)
    except TimeoutError:
        return Outcome(False, "timeout")
    except (OSError, http.client.HTTPException, ValueError):
        return Outcome(False, "connection")
    if not 200 <= status <= 299:
        return Outcome(False, "http_status", status)
    if _platform_code(platform, answer) is not None:
        return Outcome(False, "platform_error", status)
    return Outcome(True, None, status)


_APPRISE_STATUS = re.compile(r"error=([0-9]{3})\b")


def _send_apprise(url: str, text: str, timeout_s: float) -> Outcome:
    """The generic JSON webhook through apprise's ``json://`` plugin (one attempt)."""
    try:
        import apprise
    except ImportError:  # pragma: no cover  (the notifier extra installs it)
        return Outcome(False, "connection")
    if url.startswith("http://") or url.startswith("https://"):
        url = "json" + url[len("http") :]  # http -> json, https -> jsons
    plugin = apprise.Apprise.instantiate(url, suppress_exceptions=True)
    if plugin is None:
        return Outcome(False, "connection")
    plugin.socket_connect_timeout = timeout_s
    plugin.socket_read_timeout = timeout_s
    with apprise.LogCapture(level=apprise.logging.DEBUG) as captured:
        ok = bool(plugin.notify(body=text, title=""))
        log = captured.getvalue()
    if ok:
        return Outcome(True, None, None)
    m = _APPRISE_STATUS.search(log)
    if m:
        return Outcome(False, "http_status", int(m.group(1)))
    if "timed out" in log.lower():
        return Outcome(False, "timeout")
    return Outcome(False, "connection")


__all__ = [
    "REASONS",
    "Outcome",
    "dingtalk_url",
    "payload",
    "post_json",
    "send",
]
