"""formats/cost.py: the text and JSON of a cost, from models built by hand (no ledger)."""

from __future__ import annotations

import json

from vllm_ledger.formats.cost import render_json, render_text
from vllm_ledger.plan.cost import CloudPrices, Prices, Usage, compute
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
