"""formats/cost.py: the text and JSON of a cost, from models built by hand (no ledger); a power
read from an answer the store called partial or gave a warning with is INCOMPLETE, each such
answer named (``partial_answers`` in JSON), the figures otherwise the same."""

from __future__ import annotations

import dataclasses
import json

from vllm_ledger.formats.cost import render_json, render_text
from vllm_ledger.plan.cost import CloudPrices, Prices, Usage, compute
from vllm_ledger.plan.prom import Said
from vllm_ledger.plan.usage import Measured
from vllm_ledger.read.report import WindowReport

T0 = 1_800_000_000  # 2027-01-15 08:00:00 UTC
EXPR = "sum(avg_over_time(DCGM_FI_DEV_POWER_USAGE[86400s]))"
# 1 M output in a day, busy one hour at 400 W; 1 + 0.5 fixed per hour
USAGE = Usage(86400, 3600, 3_000_000, 1_000_000, 1_000_000, 400.0, 0)
WINDOW = WindowReport(
    "24h", T0, T0 + 86400, 3_000_000, 1_000_000, 1_000_000, 100, 900, 100.0, 0, True
)
MEASURED = Measured(USAGE, WINDOW, EXPR, 60)
PRICES = Prices(1, 26280, 3, 0.5, "USD")

HEAD = (
    "window 24h: 2027-01-15 08:00:00 +00:00 .. 2027-01-16 08:00:00 +00:00 "
    "(1 d = 24.00 h), amounts in USD\n"
    "tokens: input 3,000,000, output 1,000,000, cached 1,000,000 (total 4,000,000)\n"
    "coverage: complete (0 s uncovered)\n"
    f"power: 400.0 W (Prometheus: {EXPR}); busy 1 h "
    "(seconds with output > 0, counted by 60 s: an upper bound)\n"
    "per hour: electricity 0.4000 + depreciation 1.0000 + operations 0.5000 = 1.9000\n"
    "\n"
    "basis          period cost    per M output     per M total\n"
    "allocation           45.60           45.60           11.40\n"
    "usage                  0.4            0.40            0.10\n"
    "  allocation: every hour of the window, idle included; usage: electricity of busy seconds\n"
)


def test_text_with_a_break_even() -> None:
    # cloud: 2 M uncached x 1 + 1 M cached x 0.5 + 1 M output x 4 = 6.50
    cost = compute(USAGE, PRICES, CloudPrices(1, 4, 0.5))
    assert render_text(MEASURED, cost, "UTC") == HEAD + (
        "\n"
        "cloud: this traffic would cost 6.50: 6.50 per M output (1.62 per M total) "
        "at this input/output/cached mix\n"
        "break-even: daily fixed cost 36.00 / (cloud 6.50 - local marginal 0.40) per M output\n"
        "  = 5.90 M output tokens/day (23.61 M total tokens/day); "
        "this window averaged 1.00 M output tokens/day\n"
    )


def test_text_when_the_cloud_is_cheaper_than_electricity() -> None:
    cost = compute(USAGE, PRICES, CloudPrices(0.01, 0.01, 0.01))
    text = render_text(MEASURED, cost, "UTC")
    assert text.endswith(
        "break-even: daily fixed cost 36.00 / (cloud 0.04 - local marginal 0.40) per M output\n"
        "  no break-even: the cloud is not dearer than local electricity alone\n"
    )


def test_text_without_cloud_prices_and_in_another_zone() -> None:
    text = render_text(MEASURED, compute(USAGE, PRICES), "Asia/Shanghai")
    assert text.startswith("window 24h: 2027-01-15 16:00:00 +08:00 .. 2027-01-16 16:00:00 +08:00 ")
    assert text.endswith("usage: electricity of busy seconds\n")


def test_json_rounds_and_names_every_figure() -> None:
    cost = compute(USAGE, PRICES, CloudPrices(0.01, 0.01, 0.01))
    doc = json.loads(render_json(MEASURED, cost))
    assert doc["window"] == {"name": "24h", "start": T0, "cutoff": T0 + 86400}
    assert (doc["currency"], doc["power_source"], doc["busy_resolution_seconds"]) == (
        "USD",
        EXPR,
        60,
    )
    assert doc["per_hour"] == {"electricity": 0.4, "depreciation": 1.0, "operations": 0.5}
    assert doc["allocation"] == {
        "cost": 45.6,
        "per_million_output": 45.6,
        "per_million_total": 11.4,
    }
    assert doc["break_even"]["output_tokens_per_day"] is None
    assert doc["break_even"]["current_output_tokens_per_day"] == 1_000_000.0
    assert json.loads(render_json(MEASURED, compute(USAGE, PRICES)))["break_even"] is None


def test_a_power_from_a_partial_answer_is_not_a_complete_figure() -> None:
    said = {EXPR: Said(partial=True), "other": Said(warnings=("store 10.0.0.7 did not answer",))}
    told = dataclasses.replace(MEASURED, said={**said, "whole": Said()})
    cost = compute(USAGE, PRICES)
    text = render_text(told, cost, "UTC")
    power = f"power: 400.0 W (Prometheus: {EXPR}); busy 1 h "
    assert text.replace(
        "power: INCOMPLETE: read from an answer the store called partial or gave a warning with; "
        "the electricity, both bases and the break-even rest on it, so they are not complete "
        "figures either\n"
        f"  the store's answer to {EXPR} is partial (isPartial): some of its storage nodes did "
        "not answer, so a GPU's power series may be missing "
        "(docs/cost-and-capacity.md#a-partial-answer)\n"
        "  the store's answer to other came with a warning: store 10.0.0.7 did not answer\n",
        "",
    ) == render_text(MEASURED, cost, "UTC")
    assert power in text
    doc = json.loads(render_json(told, cost))
    assert doc["power_complete"] is False
    assert doc["partial_answers"] == {
        EXPR: {"is_partial": True, "warnings": [], "warnings_left_out": 0},
        "other": {
            "is_partial": False,
            "warnings": ["store 10.0.0.7 did not answer"],
            "warnings_left_out": 0,
        },
    }
    whole = json.loads(render_json(MEASURED, cost))
    assert (whole["power_complete"], whole["partial_answers"]) == (True, {})
    assert {k: v for k, v in doc.items() if k not in ("power_complete", "partial_answers")} == {
        k: v for k, v in whole.items() if k not in ("power_complete", "partial_answers")
    }
