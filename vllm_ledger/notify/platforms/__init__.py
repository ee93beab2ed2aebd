"""The chat platforms, one module each, and the one ``send`` that posts to any of them.

=============  ==========================  =====================================================
``platform``   module                      what it adds to the plain text POST
=============  ==========================  =====================================================
``feishu``     ``feishu.py``               Feishu's body; ``code`` 0; its signature in the body
``lark``       ``feishu.py``               the same (Lark is Feishu's international edition)
``dingtalk``   ``dingtalk.py``             ``errcode`` 0; its signature in the query; inbound
                                           ``/dingtalk/command`` (the outgoing robot)
``wecom``      ``wecom.py``                ``errcode`` 0
``slack``      ``slack.py``                inbound ``/slack/events`` (the Events API)
``json``       ``generic_json.py``         apprise's ``json://`` body; ``json://`` URLs
=============  ==========================  =====================================================

``PLATFORMS`` is the registry (name -> ``Platform``, in the order above); the config's
``platform`` is checked against ``names()``, the notifier serves ``inbound()``'s routes, and
``send`` asks ``get(name)`` for the body, the signature, the URL and the success rule. A new
platform is a module that builds its ``Platform`` (``base.py``) and one line in ``_ALL``. Each
``body`` neutralises its platform's mentions and links in the whole text (``base.joined``;
docs/notifier.md, "Mentions and links").

``send`` posts through the one HTTP client (``vllm_ledger.http.client``) with one deadline,
``timeout_s`` (the notifier's ``deliver_timeout_s``), for the whole request: connect, send,
headers and answer, so a webhook that drips its answer is cut there and the delivery is
``timeout``. Redirects are not followed (a 3xx is ``http_status``). The answer is read at
most 64 KiB and only its HTTP status and the platform's verdict are kept: no remote text.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from vllm_ledger.errors import RemoteError, RemoteTimeout
from vllm_ledger.http import client
from vllm_ledger.notify.platforms import dingtalk, feishu, generic_json, slack, wecom
from vllm_ledger.notify.platforms.base import Inbound, Platform

_ALL: tuple[Platform, ...] = (
    feishu.FEISHU,
    feishu.LARK,
    dingtalk.DINGTALK,
    wecom.WECOM,
    slack.SLACK,
    generic_json.JSON,
)
PLATFORMS: dict[str, Platform] = {p.name: p for p in _ALL}

MAX_ANSWER_BYTES = 64 * 1024
Reason = Literal["timeout", "http_status", "connection", "platform_error", "no_webhook"]
# every reason a delivery can be recorded with: send's, and the store's own at a start
REASONS: tuple[str, ...] = (
    "timeout",
    "http_status",
    "connection",
    "platform_error",
    "no_webhook",
    "interrupted",
)


def get(name: str) -> Platform:
    """The platform called ``name``; ``KeyError`` for one not registered."""
    return PLATFORMS[name]


def names() -> tuple[str, ...]:
    return tuple(PLATFORMS)


def inbound() -> tuple[tuple[Platform, Inbound], ...]:
    """The platforms that send their own command requests, each with its ``Inbound``."""
    return tuple((p, p.inbound) for p in PLATFORMS.values() if p.inbound is not None)


@dataclass(frozen=True)
class Outcome:
    """``sent``, or ``failed`` with a reason from ``REASONS`` and the HTTP status if any."""

    ok: bool
    reason: Reason | None = None
    http_status: int | None = None


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
    p = get(platform)
    target, doc = p.url(url), p.body(text)
    if secret and p.sign is not None:
        signed = p.sign(target, secret, clock())
        target, doc = signed.url, {**doc, **signed.fields}
    try:
        answer = client.post(
            target,
            json.dumps(doc, ensure_ascii=False).encode(),
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
    if not p.ok(answer.status, answer.body):
        return Outcome(False, "platform_error", answer.status)
    return Outcome(True, None, answer.status)


__all__ = [
    "MAX_ANSWER_BYTES",
    "PLATFORMS",
    "REASONS",
    "Inbound",
    "Outcome",
    "Platform",
    "Reason",
    "get",
    "inbound",
    "names",
    "send",
]
