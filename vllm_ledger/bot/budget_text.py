"""The chat message when a budget reaches its soft or its hard level. Pure.

One line in the bot's language: who (the label's kind and value, or the budget's name where
the value is not of a label's shape), how much of what (used and the limit, in tokens or the
price file's money, and the fraction), where (the node ports of the host), the period (its
start and end in the host's time), the projection to the period's end at the rate so far, and
for a hard budget whether the host refuses the label (429) until then. Built from this
module's words, validated numbers and shape-checked names (``formats/status_budgets.py``)
only.
"""

from __future__ import annotations

import time

from vllm_ledger.bot.humanize import human_count, utc_offset
from vllm_ledger.formats.status_budgets import StatusBudget

_WORDS: dict[str, dict[str, str]] = {
    "zh": {
        "soft": "小鲁班 · 预算预警",
        "hard": "小鲁班 · 预算超限",
        "key": "密钥",
        "adapter": "适配器",
        "user": "用户",
        "tenant": "租户",
        "input": "输入 token",
        "output": "输出 token",
        "total": "总 token",
        "cost": "费用",
        "used": "{who} 已用{what} {used} / {limit}({pct})",
        "day": "日",
        "month": "月",
        "period": "{per} {start} 至 {end}",
        "projected": "按当前速度到周期结束约 {p}",
        "early": "周期刚开始,暂无预测",
        "enforced": "已强制:429 拒绝至 {end}",
        "not_enforced": "未强制执行",
        "budget": "预算 {name}",
        "sep": " · ",
        "colon": ":",
    },
    "en": {
        "soft": "BUDGET SOFT",
        "hard": "BUDGET HARD",
        "key": "key",
        "adapter": "adapter",
        "user": "user",
        "tenant": "tenant",
        "input": " input tokens",
        "output": " output tokens",
        "total": " tokens",
        "cost": " cost",
        "used": "{who} used {used} of {limit}{what} ({pct})",
        "day": "day",
        "month": "month",
        "period": "{per} {start} to {end}",
        "projected": "at this rate {p} by its end",
        "early": "too early in the period for a projection",
        "enforced": "enforced: answered 429 until {end}",
        "not_enforced": "not enforced",
        "budget": "budget {name}",
        "sep": " · ",
        "colon": ": ",
    },
}


def host_instant(ts: float, offset_s: int, *, seconds: bool = False) -> str:
    """``ts`` on the host's clock face (``offset_s`` east of UTC): ``11-30 09:53``."""
    fmt = "%m-%d %H:%M:%S" if seconds else "%m-%d %H:%M"
    return time.strftime(fmt, time.gmtime(ts + offset_s))


def amount(x: float, figure: str, currency: str = "") -> str:
    """Tokens human-sized (``1.2M``); money with two decimals and the price file's currency."""
    if figure == "cost":
        return f"{x:,.2f}" + (f" {currency}" if currency else "")
    return human_count(round(x))


def who_text(b: StatusBudget, lang: str) -> str:
    w = _WORDS[lang]
    if b.value is None:  # not of a label's shape: the budget's own name says which
        return f"{w[b.kind]} ({w['budget'].format(name=b.name)})"
    return f"{w[b.kind]} {b.value or '(none)'}"


def budget_text(b: StatusBudget, where: str, offset_s: int, lang: str, currency: str = "") -> str:
    """The message for ``b`` at its level (soft or hard), on the host ``where`` (its ports)."""
    w = _WORDS[lang]
    head = w["hard"] if b.level == "hard" else w["soft"]
    used = w["used"].format(
        who=who_text(b, lang),
        what=w[b.figure],
        used=amount(b.used, b.figure, currency),
        limit=amount(b.limit, b.figure, currency),
        pct=f"{b.fraction * 100:.1f}%",
    )
    zone = utc_offset(offset_s)
    period = w["period"].format(
        per=w["day"] if b.end_ts - b.start_ts <= 26 * 3600 else w["month"],
        start=host_instant(b.start_ts, offset_s),
        end=f"{host_instant(b.end_ts, offset_s)} {zone}",
    )
    parts = [used, where, period]
    if b.projected is None:
        parts.append(w["early"])
    else:
        parts.append(w["projected"].format(p=amount(b.projected, b.figure, currency)))
    if b.level == "hard":
        end = host_instant(b.end_ts, offset_s)
        parts.append(w["enforced"].format(end=end) if b.enforce else w["not_enforced"])
    if b.value is not None:
        parts.append(w["budget"].format(name=b.name))
    return f"{head}{w['colon']}" + w["sep"].join(parts) + "\n"


__all__ = ["amount", "budget_text", "host_instant", "utc_offset", "who_text"]
