"""Budget amounts as the budget tables print them (formats/budget_states.py): tokens with
thousands separators, money with two decimals and its currency."""

from __future__ import annotations

from vllm_ledger.formats.budget_states import HEADER, HEADER_END, SCHEMA, amount_text


def test_tokens_and_money() -> None:
    assert amount_text(1234567.4, "input") == "1,234,567"
    assert amount_text(1234567.5, "total") == "1,234,568"
    assert amount_text(1234.5, "cost") == "1,234.50"
    assert amount_text(0.004, "cost", "USD") == "0.00 USD"


def test_the_tables_columns() -> None:
    assert SCHEMA == 1
    assert (*HEADER, *HEADER_END) == (
        "budget", "who", "period", "figure", "used", "limit", "used %", "level", "projected",
        "refuses", "period ends",
    )  # fmt: skip
