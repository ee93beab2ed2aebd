"""Feishu and Lark (Feishu's international edition): the custom bot webhook. Pure.

=======  ===========================================================================
body     ``{"msg_type": "text", "content": {"text": T}}``, a word joiner after every
         ``<`` and ``@`` of T and inside ``](`` / ``][``
success  2xx and no non-zero ``code`` (``StatusCode`` in older answers) in the JSON
sign     in the body: ``timestamp`` (s) and ``sign`` = base64(HMAC-SHA256(key
         ``"{timestamp}\\n{secret}"``, empty message)) when a secret is configured
inbound  none: Feishu's events are signed (and encrypted) otherwise; use a relay
=======  ===========================================================================

A text message reads tags: ``<at user_id="all"></at>`` mentions everyone,
``<at user_id="ou_…">`` one person, and ``<at id=all>``, ``<a href>`` and ``[text](url)`` are
the card and rich-text forms (Feishu's "Send message content structure",
https://open.feishu.cn/document/uAjLw4CM/ukTMukTMukTM/im-v1/message/create_json, and the custom
bot guide). A word joiner right after ``<`` leaves no tag name there (``<\u2060at``), after
``](`` no link (``[text]\u2060(url)``), after ``@`` no plain-text ``@all``.
"""

from __future__ import annotations

from typing import Any

from vllm_ledger.notify.platforms.base import Platform, Signed, error_code, joined
from vllm_ledger.notify.signing import hmac_sha256_base64

MARKUP = "<@"  # each is followed by a word joiner: no tag, no mention (links: unlinked)


def body(text: str) -> dict[str, Any]:
    return {"msg_type": "text", "content": {"text": joined(text, MARKUP)}}


def ok(status: int, answer: bytes) -> bool:
    return 200 <= status <= 299 and error_code(answer, ("code", "StatusCode")) is None


def signature(secret: str, timestamp: str) -> str:
    """The ``sign`` field: the key is the timestamp and the secret, the message is empty."""
    return hmac_sha256_base64(f"{timestamp}\n{secret}".encode(), b"")


def sign(url: str, secret: str, now_ts: float) -> Signed:
    timestamp = str(int(now_ts))
    return Signed(url, {"timestamp": timestamp, "sign": signature(secret, timestamp)})


FEISHU = Platform("feishu", body, ok, sign)
LARK = Platform("lark", body, ok, sign)

__all__ = ["FEISHU", "LARK", "MARKUP", "body", "ok", "sign", "signature"]
