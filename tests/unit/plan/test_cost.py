"""The cost model against the worked example (docs/cost-and-capacity.md), and
`vllm-ledger cost` on built ledgers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.ledgers import ev, write_ledger
from vllm_ledger.plan.cost import (
    CloudPrices,
    Prices,
    Usage,
    break_even_tokens_per_day,
    compute,
    per_million,
)

WEEK_S = 7 * 24 * 3600
EXAMPLE = Prices(electricity_per_kwh=1.0, hardware_price=20000, lifetime_years=3, ops_per_hour=0.1)


def _week(tokens_per_hour: float, busy_fraction: float = 1.0) -> Usage:
    out = round(tokens_per_hour * 24 * 7)
    return Usage(
        wall_seconds=WEEK_S,
        busy_seconds=WEEK_S * busy_fraction,
        input_tokens=0,
        output_tokens=out,
        cached_tokens=0,
        power_watts=475,
    )


def test_worked_example_is_0_64_per_million() -> None:
    # The worked example's ten lines, verbatim in spirit:
    # hours * (elec + dep + ops) / (tokens / 1e6).
    hours = 24 * 7
    elec = 475 / 1000 * 1.0
    dep = 20000 / (3 * 8760)
    ops = 0.1
    tokens = 2.1e6 * hours
    expected = hours * (elec + dep + ops) / (tokens / 1e6)
    c = compute(_week(2.1e6), EXAMPLE)
    assert c.allocation_per_million_output == pytest.approx(expected, rel=1e-12)
    assert f"{c.allocation_per_million_output:.2f}" == "0.64"
    assert f"{c.electricity_per_hour:.2f}" == "0.47"  # the table's "≈ 0.48" is 0.475 rounded up
    assert f"{c.depreciation_per_hour:.2f}" == "0.76"
    # No input tokens in the example: per million total equals per million output.
    assert c.allocation_per_million_total == c.allocation_per_million_output


def test_marginal_price_is_0_23_and_break_even_about_17_million_a_day() -> None:
    c = compute(_week(2.1e6), EXAMPLE, CloudPrices(0.0, 1.5, 0.0))
    # Usage basis with the machine busy all week: electricity per million = the example's
    # "local marginal price about 0.23".
    assert f"{c.usage_per_million_output:.2f}" == "0.23"
    be = c.break_even
    assert be is not None
    assert f"{be.daily_fixed_cost:.1f}" == "20.7"  # the example's "about 21"
    # The example's arithmetic with its rounded figures: 21 / (1.5 - 0.23) = 16.5 -> "about 17".
    rounded = break_even_tokens_per_day(21, 1.5, 0.23)
    assert rounded is not None
    assert f"{rounded / 1e6:.1f}" == "16.5" and round(rounded / 1e6) == 17
    # Unrounded, the same formula gives 16.2 M/day: "about 17" is the example rounding twice.
    assert be.output_tokens_per_day is not None
    assert f"{be.output_tokens_per_day / 1e6:.1f}" == "16.2"
    assert be.cloud_per_million_output == pytest.approx(1.5)


def test_ten_percent_utilisation_costs_over_2_per_million() -> None:
    c = compute(_week(2.1e6 * 0.10, busy_fraction=0.10), EXAMPLE)
    assert c.allocation_per_million_output is not None
    assert c.allocation_per_million_output > 2
    assert f"{c.allocation_per_million_output:.2f}" == "6.36"
    # The marginal electricity per token does not change with utilisation.
    assert f"{c.usage_per_million_output:.2f}" == "0.23"


def test_cloud_price_uses_the_services_own_mix() -> None:
    u = Usage(
        wall_seconds=86400,
        busy_seconds=3600,
        input_tokens=3_000_000,
        output_tokens=1_000_000,
        cached_tokens=1_000_000,
        power_watts=400,
    )
    cloud = CloudPrices(input_per_million=2.0, output_per_million=8.0, cached_per_million=0.5)
    c = compute(u, EXAMPLE, cloud)
    be = c.break_even
    assert be is not None
    # 2 M uncached input * 2 + 1 M cached * 0.5 + 1 M output * 8 = 12.5
    assert be.cloud_cost == pytest.approx(12.5)
    assert be.cloud_per_million_output == pytest.approx(12.5)
    assert be.cloud_per_million_total == pytest.approx(12.5 / 4)
    marginal = 0.4 * 1.0 * 1 / 1.0  # 400 W for one busy hour, per 1 M output tokens
    assert be.marginal_per_million_output == pytest.approx(marginal)
    assert be.output_tokens_per_day == pytest.approx(be.daily_fixed_cost / (12.5 - marginal) * 1e6)
    assert be.output_tokens_per_day is not None
    assert be.total_tokens_per_day == pytest.approx(be.output_tokens_per_day * 4)
    assert be.current_output_tokens_per_day == pytest.approx(1_000_000)


def test_no_tokens_and_no_break_even_are_none_not_zero() -> None:
    u = Usage(
        wall_seconds=3600,
        busy_seconds=0,
        input_tokens=0,
        output_tokens=0,
        cached_tokens=0,
        power_watts=100,
    )
    c = compute(u, EXAMPLE, CloudPrices(1, 1, 1))
    assert c.allocation_per_million_output is None and c.usage_per_million_total is None
    assert c.allocation_cost == pytest.approx(0.1 + 20000 / (3 * 8760) + 0.1)
    assert per_million(1.0, 0) is None
    assert break_even_tokens_per_day(20, 0.2, 0.3) is None  # cloud cheaper than electricity


def _ledger(root: Path, t0: int) -> None:
    events = [
        ev(t0 + 10.5, prompt=1000, cached=400, gen=300),
        ev(t0 + 11.5, gen=200),
        ev(t0 + 100.5, prompt=500, gen=500),
    ]
    write_ledger(root, "run-a", start_ts=t0, end_ts=t0 + 3600, events=events)


PRICES = (
    "--electricity-price",
    "1",
    "--hardware-price",
    "20000",
    "--lifetime-years",
    "3",
    "--ops-per-hour",
    "0.1",
)


def test_cost_cli_text_and_json(tmp_path: Path) -> None:
    t0 = 1_800_000_000
    _ledger(tmp_path, t0)
    at = str(t0 + 3600)
    code, out, err = run_cli(
        "cost",
        "--root",
        str(tmp_path),
        "--at",
        at,
        "--window",
        "24h",
        "--power-watts",
        "475",
        *PRICES,
        "--json",
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["tokens"] == {"input": 1500, "output": 1000, "cached": 400, "total": 2500}
    assert doc["busy_seconds"] == 3 and doc["busy_resolution_seconds"] == 1
    assert doc["hours"] == 24 and doc["wall_seconds"] == 86400
    assert doc["uncovered_seconds"] == 23 * 3600 and doc["lower_bound"] is True
    per_hour = 0.475 + 20000 / (3 * 8760) + 0.1
    assert doc["allocation"]["per_million_output"] == round(24 * per_hour / 0.001, 6)
    assert doc["usage"]["per_million_total"] == round(0.475 * 3 / 3600 / 0.0025, 6)
    assert doc["break_even"] is None

    code, out, err = run_cli(
        "cost",
        "--root",
        str(tmp_path),
        "--at",
        at,
        "--window",
        "24h",
        "--power-watts",
        "475",
        *PRICES,
        "--currency",
        "EUR",
        "--cloud-input-price",
        "1",
        "--cloud-output-price",
        "1.5",
    )
    assert code == 0, err
    assert "amounts in EUR" in out
    assert "LOWER BOUND of usage" in out
    assert f"{'allocation':<12}{'32.06':>14}{'32,064.84':>16}{'12,825.94':>16}" in out
    assert f"{'usage':<12}{'0.000396':>14}{'0.40':>16}{'0.16':>16}" in out
    # 1,100 uncached input at 1 + 400 cached at 1 (the input price) + 1,000 output at 1.5
    assert "cloud: this traffic would cost 0.003: 3.00 per M output (1.20 per M total)" in out
    assert (
        "= 7.94 M output tokens/day (19.84 M total tokens/day); "
        "this window averaged 1,000 output tokens/day"
    ) in out


def test_cost_cli_config_file_and_errors(tmp_path: Path) -> None:
    t0 = 1_800_000_000
    _ledger(tmp_path / "l", t0)
    cfg = tmp_path / "cost.yaml"
    cfg.write_text(
        "electricity_price: 1\nhardware_price: 20000\nlifetime_years: 3\n"
        "ops_per_hour: 0.1\npower_watts: 475\n"
    )
    base = ("cost", "--root", str(tmp_path / "l"), "--at", str(t0 + 3600), "--window", "today")
    code, out, err = run_cli(*base, "--config", str(cfg), "--json")
    assert code == 0, err
    assert json.loads(out)["power_watts"] == 475
    code, out, err = run_cli(*base, "--config", str(cfg), "--power-watts", "300", "--json")
    assert json.loads(out)["power_watts"] == 300  # a flag overrides the file

    code, _out, err = run_cli(*base, "--power-watts", "300")
    assert code == 2
    assert err == (
        "vllm-ledger: error: missing --electricity-price, --hardware-price, "
        "--lifetime-years, --ops-per-hour: give them as flags or in --config FILE\n"
    )
    code, _out, err = run_cli(*base, *PRICES)
    assert err == (
        "vllm-ledger: error: give the machine's power: --power-watts W or --prometheus URL\n"
    )
    cfg.write_text("electricity: 1\n")
    code, _out, err = run_cli(*base, "--config", str(cfg))
    assert code == 2 and "unknown setting 'electricity'" in err
    code, _out, err = run_cli(*base, *PRICES, "--power-watts", "1", "--cloud-output-price", "2")
    assert code == 2 and "needs both --cloud-input-price and --cloud-output-price" in err
