"""WeCom (企业微信): the group bot webhook. Pure.

=======  ===========================================================================
body     ``{"msgtype": "text", "text": {"content": T}}``, a word joiner after every
         ``@`` and ``<`` of T and inside ``](`` / ``][``; no ``mentioned_list`` /
         ``mentioned_mobile_list``
success  2xx and no non-zero ``errcode`` in the JSON
sign     none: the webhook's ``key`` is the secret
inbound  none: WeCom's callbacks are encrypted; use a relay
=======  ===========================================================================

A group bot mentions people through the text message's ``mentioned_list`` (user ids, ``"@all"``
for everyone) and ``mentioned_mobile_list``, and with ``<@userid>`` in the content of a text or
markdown message; markdown also links with ``[text](url)`` (WeCom's "群机器人配置说明",
https://developer.work.weixin.qq.com/document/path/91770). The body never has either list, and
the word joiner after ``@`` and ``<`` and inside ``](`` leaves no ``@all``, ``<@userid>`` or
link in the text.
"""

from __future__ import annotations

from typing import Any

from vllm_ledger.notify.platforms.base import Platform, error_code, joined

MARKUP = "@<"  # each is followed by a word joiner: no mention, no tag (links: unlinked)


def body(text: str) -> dict[str, Any]:
    return {"msgtype": "text", "text": {"content": joined(text, MARKUP)}}


def ok(status: int, answer: bytes) -> bool:
    return 200 <= status <= 299 and error_code(answer, ("errcode",)) is None


WECOM = Platform("wecom", body, ok)

__all__ = ["MARKUP", "WECOM", "body", "ok"]
