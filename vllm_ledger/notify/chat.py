"""What the notifier reads from a chat and writes to it, in its own words. Pure.

A command request's body is JSON: ``{"message_id": "...", "text": "@bot status"}``. The text
is read for one word after any ``@mention``: ``状态``/``status`` (the reply's language follows
the word), ``帮助``/``help``, ``重发 N``/``resend N``, ``用量``/``usage`` with an optional label
(``key``, ``adapter``, ``user``: ``密钥``, ``适配器``, ``用户``) and window (``today``, ``7d``,
``month``: ``今天``, ``7天``, ``本月``), in either order; anything else gets the help. A usage
command is stored as its ask (``usage:key:today``: ``formats/status_asked.py``). Only our own
words, validated numbers, health codes and the config's ports reach a message.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from vllm_ledger.bot.health import Health
from vllm_ledger.bot.humanize import ip_last_part
from vllm_ledger.errors import LedgerError
from vllm_ledger.formats.status_asked import usage_ask
from vllm_ledger.notify.outbox import Delivery
from vllm_ledger.read.zone import machine_zone
from vllm_ledger.units import format_instant

MAX_MESSAGE_ID_CHARS = 128
MAX_TEXT_CHARS = 2000
_MESSAGE_ID = re.compile(r"^[\x21-\x7e]{1,128}$")
_MENTION = re.compile(r"@\S+")
COMMANDS: tuple[str, ...] = ("status", "help", "resend", "usage")
_USAGE_BY = {
    "key": "key", "keys": "key", "密钥": "key",
    "adapter": "adapter", "adapters": "adapter", "适配器": "adapter",
    "user": "user", "users": "user", "用户": "user",
}  # fmt: skip
_USAGE_WINDOW = {
    "today": "today", "今天": "today", "今日": "today",
    "7d": "7d", "7天": "7d", "七天": "7d", "week": "7d",
    "month": "month", "本月": "month", "this-month": "month",
}  # fmt: skip


@dataclass(frozen=True)
class Request:
    message_id: str
    command: str
    arg: int | None
    lang: str


class BadRequest(LedgerError, ValueError):
    """A command body that is not ``{"message_id", "text"}`` within bounds."""


def parse_request(doc: object, default_lang: str = "zh") -> Request:
    if not isinstance(doc, dict):
        raise BadRequest("not an object")
    mid, text = doc.get("message_id"), doc.get("text")
    if not isinstance(mid, str) or not _MESSAGE_ID.fullmatch(mid):
        raise BadRequest("message_id: 1-128 printable ASCII characters")
    if not isinstance(text, str) or len(text) > MAX_TEXT_CHARS:
        raise BadRequest("text: a string of at most 2000 characters")
    words = _MENTION.sub(" ", unicodedata.normalize("NFKC", text)).split()
    first = words[0].lower() if words else ""
    if first in ("状态", "狀態"):
        return Request(mid, "status", None, "zh")
    if first == "status":
        return Request(mid, "status", None, "en")
    if first in ("重发", "resend") and len(words) == 2 and re.fullmatch(r"#?[0-9]{1,12}", words[1]):
        return Request(mid, "resend", int(words[1].lstrip("#")), "zh" if first == "重发" else "en")
    if first in ("帮助", "help"):
        return Request(mid, "help", None, "zh" if first == "帮助" else "en")
    if first in ("用量", "usage"):
        ask = _usage([w.lower() for w in words[1:]])
        if ask is not None:
            return Request(mid, ask, None, "zh" if first == "用量" else "en")
    return Request(mid, "help", None, default_lang)


def _usage(words: list[str]) -> str | None:
    """The ask of ``usage [BY] [WINDOW]`` (either order; key and today by default), or None
    for any other word."""
    by, window = "key", "today"
    seen_by = seen_window = False
    for word in words:
        if word in _USAGE_BY and not seen_by:
            by, seen_by = _USAGE_BY[word], True
        elif word in _USAGE_WINDOW and not seen_window:
            window, seen_window = _USAGE_WINDOW[word], True
        else:
            return None
    return usage_ask(by, window).word


_HELP = {
    "zh": "小鲁班 · 帮助\n@小鲁班 状态:部署数量、健康和每个实例的五个窗口\n"
    "@小鲁班 用量 [密钥|适配器|用户] [今天|7天|本月]:谁用了多少 token,及未归属的部分\n"
    "@小鲁班 重发 ID:重新发送一条失败的通知\n@小鲁班 帮助:本说明",
    "en": "Help\n@bot status: deployments, health and each instance's five windows\n"
    "@bot usage [key|adapter|user] [today|7d|month]: whose tokens, and what is not attributed\n"
    "@bot resend ID: send a failed notification again\n@bot help: this text",
}
_REASONS = {
    "zh": {
        "timeout": "超时",
        "http_status": "HTTP {code}",
        "connection": "连接失败",
        "platform_error": "平台拒绝(HTTP {code})",
        "no_webhook": "未配置 webhook",
        "interrupted": "发送中断,不确定是否送达",
    },
    "en": {
        "timeout": "timeout",
        "http_status": "HTTP {code}",
        "connection": "connection failed",
        "platform_error": "refused by the platform (HTTP {code})",
        "no_webhook": "no webhook configured",
        "interrupted": "interrupted mid-delivery, may or may not have arrived",
    },
}
_KINDS = {
    "zh": {"reply": "回复", "health": "健康", "alert": "告警", "budget": "预算", "digest": "日报"},
    "en": {"reply": "reply", "health": "health", "alert": "alert", "budget": "budget",
           "digest": "digest"},
}  # fmt: skip


def help_text(lang: str) -> str:
    return _HELP.get(lang, _HELP["zh"]) + "\n"


def reason_text(d: Delivery, lang: str) -> str:
    words = _REASONS.get(lang, _REASONS["zh"])
    return words.get(d.reason or "", d.reason or "?").format(code=d.http_status or "?")


def failures_block(failed: Sequence[Delivery], lang: str) -> str:
    """The lines the next status reply adds for deliveries that failed or ended unknown."""
    if not failed:
        return ""
    kinds = _KINDS.get(lang, _KINDS["zh"])
    head = (
        "投递失败(不会自动重发;@小鲁班 重发 ID 或 vllm-ledger notifier resend ID):"
        if lang == "zh"
        else "failed deliveries (never resent by themselves; @bot resend ID or "
        "vllm-ledger notifier resend ID):"
    )
    lines = [head]
    for d in failed:
        when = format_instant(d.created_ts, machine_zone()[0])[5:]  # 12-01 08:00:00 +08:00
        state = d.state if lang == "en" else {"failed": "失败", "unknown": "未知"}.get(d.state, "")
        maybe = ""
        if d.state == "unknown" and d.reason != "interrupted":  # sent, no answer came
            maybe = (
                "(可能已送达,确认未收到再重发)"
                if lang == "zh"
                else " (may have arrived: resend only if it did not)"
            )
        lines.append(
            f"#{d.id} {kinds.get(d.kind, d.kind)} {when} {state}: {reason_text(d, lang)}{maybe}"
        )
    return "\n".join(lines) + "\n"


def resend_text(old: int, new: int | None, lang: str) -> str:
    if new is None:
        return (
            f"没有可重发的通知 #{old}\n" if lang == "zh" else f"no notification #{old} to resend\n"
        )
    return (
        f"已重新排队 #{old},新的投递编号 #{new}\n"
        if lang == "zh"
        else f"notification #{old} queued again as #{new}\n"
    )


def health_text(port: int, host: str | None, old: str | None, h: Health, lang: str) -> str:
    """One transition: ``down`` or ``up`` (only codes and numbers from our side)."""
    last = ip_last_part(host)
    label = f"{last}:{port}" if last else f":{port}"
    code = f" HTTP {h.http_status}" if h.http_status and h.state == "unhealthy" else ""
    if lang == "zh":
        if h.state == "healthy":
            return f"小鲁班 · 恢复:vLLM {label} 已恢复健康\n"
        return (
            f"小鲁班 · 故障:vLLM {label} {'异常' if h.state == 'unhealthy' else '无响应'}{code}\n"
        )
    if h.state == "healthy":
        return f"UP: vLLM {label} is healthy again\n"
    what = "unhealthy" if h.state == "unhealthy" else "not responding"
    return f"DOWN: vLLM {label} is {what}{code}\n"


__all__ = [
    "COMMANDS",
    "BadRequest",
    "Request",
    "failures_block",
    "health_text",
    "help_text",
    "parse_request",
    "resend_text",
]
