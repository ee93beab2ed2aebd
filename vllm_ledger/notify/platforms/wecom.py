"""WeCom (企业微信): the group bot webhook. Pure.

=======  ===========================================================================
body     ``{"msgtype": "text", "text": {"content": T}}``
success  2xx and no non-zero ``errcode`` in the JSON
sign     none: the webhook's ``key`` is the secret
inbound  none: WeCom's callbacks are encrypted; use a relay
=======  ===========================================================================
"""

from __future__ import annotations

from typing import Any

from vllm_ledger.notify.platforms.base import Platform, error_code


def body(text: str) -> dict[str, Any]:
    return {"msgtype": "text", "text": {"content": text}}


def ok(status: int, answer: bytes) -> bool:
    return 200 <= status <= 299 and error_code(answer, ("errcode",)) is None


WECOM = Platform("wecom", body, ok)

__all__ = ["WECOM", "body", "ok"]
