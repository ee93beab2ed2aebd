"""bot/budget_text.py: the budget messages, exactly, in both languages, from parsed documents
only; and the parts they are made of."""

from __future__ import annotations

import json
from typing import Any

from tests.unit.formats.test_status import GOOD
from vllm_ledger.bot.budget_text import amount, budget_text, host_instant, who_text
from vllm_ledger.formats.status import StatusDoc, parse

DAY = 1_795_996_800  # 2026-11-30 00:00 UTC = 08:00 at +08:00


BUDGET = {
    "name": "team-a-day", "kind": "key", "value": "team-a", "figure": "total",
    "limit": 2_000_000, "used": 1_700_000, "fraction": 0.85, "soft": 0.8, "hard": 1.0,
    "level": "soft", "start": DAY - 8 * 3600, "end": DAY + 16 * 3600, "projected": 2_400_000,
    "enforce": True,
}  # fmt: skip


def _budget(**change: Any) -> tuple[StatusDoc, Any]:
    block = {"rows": [{**BUDGET, **change}], "truncated": 0, "truncated_over": 0,
             "problem": None, "currency": "CNY"}  # fmt: skip
    doc = parse(json.dumps({**GOOD, "budgets": block}).encode())
    assert doc.budgets is not None
    return doc, doc.budgets.rows[0]


def test_the_soft_and_hard_messages_in_both_languages() -> None:
    doc, soft = _budget()
    assert budget_text(soft, ".12:19001", doc.tz_offset_seconds, "en") == (
        "BUDGET SOFT: key team-a used 1.7M of 2.0M tokens (85.0%) · .12:19001 · day 11-30 00:00 "
        "to 12-01 00:00 +08:00 · at this rate 2.4M by its end · budget team-a-day\n"
    )
    assert budget_text(soft, ".12:19001", doc.tz_offset_seconds, "zh") == (
        "小鲁班 · 预算预警:密钥 team-a 已用总 token 1.7M / 2.0M(85.0%) · .12:19001 · "
        "日 11-30 00:00 至 12-01 00:00 +08:00 · 按当前速度到周期结束约 2.4M · 预算 team-a-day\n"
    )
    doc, hard = _budget(used=2_100_000, fraction=1.05, level="hard", projected=None)
    assert budget_text(hard, ":19001", doc.tz_offset_seconds, "en") == (
        "BUDGET HARD: key team-a used 2.1M of 2.0M tokens (105.0%) · :19001 · day 11-30 00:00 "
        "to 12-01 00:00 +08:00 · too early in the period for a projection · enforced: answered "
        "429 until 12-01 00:00 · budget team-a-day\n"
    )
    doc, cost = _budget(
        figure="cost", limit=10.0, used=12.5, fraction=1.25, level="hard", enforce=False,
        value=None, kind="user", projected=40.0, end=DAY + 31 * 86400 - 8 * 3600,
    )  # fmt: skip
    assert budget_text(cost, ":19001", doc.tz_offset_seconds, "zh", "CNY") == (
        "小鲁班 · 预算超限:用户 (预算 team-a-day) 已用费用 12.50 CNY / 10.00 CNY(125.0%) · "
        ":19001 · 月 11-30 00:00 至 12-31 00:00 +08:00 · 按当前速度到周期结束约 40.00 CNY · "
        "未强制执行\n"
    )


def test_the_parts_of_a_message() -> None:
    assert host_instant(DAY, 8 * 3600) == "11-30 08:00"
    assert host_instant(DAY + 59, -3 * 3600 - 1800, seconds=True) == "11-29 20:30:59"
    assert amount(1_234_567.4, "input") == "1.2M"
    assert amount(999, "total") == "999"
    assert amount(1234.5, "cost", "USD") == "1,234.50 USD"
    assert amount(0.004, "cost") == "0.00"
    _doc, row = _budget(value="")
    assert who_text(row, "en") == "key (none)"
    _doc, row = _budget(value=None, kind="tenant")
    assert who_text(row, "en") == "tenant (budget team-a-day)"
    assert who_text(row, "zh") == "租户 (预算 team-a-day)"
