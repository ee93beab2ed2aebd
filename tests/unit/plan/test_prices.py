"""plan/prices.py: what `cost` is given, merged from a YAML file and flags, checked once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vllm_ledger.errors import BadArgument, ConfigError
from vllm_ledger.plan.cost import CloudPrices, Prices
from vllm_ledger.plan.prices import SETTINGS, PriceSettings, load_prices

PRICES = {"electricity_price": 1.0, "hardware_price": 20000.0, "lifetime_years": 3.0}
FLAGS = {**PRICES, "ops_per_hour": 0.1}


def _given(**kw: Any) -> dict[str, Any]:
    """Every setting, None where no flag was given (as argparse leaves them)."""
    return {key: kw.get(key) for key in SETTINGS}


def test_flags_alone() -> None:
    assert load_prices(None, _given(**FLAGS, power_watts=475.0)) == PriceSettings(
        Prices(1.0, 20000.0, 3.0, 0.1, "CNY"), None, 475.0, None
    )


def test_a_flag_overrides_the_file_and_the_power_source_given_wins(tmp_path: Path) -> None:
    cfg = tmp_path / "cost.yaml"
    cfg.write_text(
        "electricity_price: 2\nhardware_price: 20000\nlifetime_years: 3\nops_per_hour: 0.1\n"
        "prometheus: http://prom:9090\ncloud_input_price: 1\ncloud_output_price: 3\n"
        "currency: EUR\n"
    )
    s = load_prices(cfg, _given())
    assert s.prices == Prices(2.0, 20000.0, 3.0, 0.1, "EUR")
    assert s.cloud == CloudPrices(1.0, 3.0, 1.0)  # cached defaults to the input price
    assert (s.power_watts, s.prometheus_url) == (None, "http://prom:9090")
    s = load_prices(cfg, _given(electricity_price=0.5, power_watts=300.0))
    assert s.prices.electricity_per_kwh == 0.5
    assert (s.power_watts, s.prometheus_url) == (300.0, None)
    cfg.write_text(cfg.read_text() + "power_watts: 475\n")
    s = load_prices(cfg, _given(prometheus="http://other:9090"))
    assert (s.power_watts, s.prometheus_url) == (None, "http://other:9090")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a\n", "must be a mapping of setting: value"),
        ("electricity: 1\n", "unknown setting 'electricity': use one of power_watts, "),
        ("hardware_price: abc\n", "hardware_price must be a float, not 'abc'"),
        ("a: [\n", "is not valid YAML: fix it or pass the prices as flags"),
    ],
)
def test_a_bad_file_is_one_line_naming_it(tmp_path: Path, text: str, message: str) -> None:
    cfg = tmp_path / "cost.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_prices(cfg, _given(**FLAGS))
    assert str(cfg) in str(exc.value) and message in str(exc.value)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (PRICES, "missing ops_per_hour: give them, or set them in the config file"),
        ({**FLAGS, "power_watts": -1.0}, "power_watts must not be negative"),
        ({**FLAGS, "lifetime_years": 0.0}, "lifetime_years must be above 0"),
        ({**FLAGS, "cloud_cached_price": 0.1}, "needs both cloud_input_price and cloud_"),
    ],
)
def test_bad_settings_are_one_line_naming_the_setting(given: dict[str, Any], message: str) -> None:
    with pytest.raises(BadArgument, match=message):
        load_prices(None, _given(**given))


def test_a_bad_value_in_the_file_names_the_file_and_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "prices.json"
    cfg.write_text('{"lifetime_years": 0}')
    with pytest.raises(ConfigError) as exc:
        load_prices(cfg, _given(**{**PRICES, "lifetime_years": None, "ops_per_hour": 0.1}))
    assert (str(exc.value), exc.value.key) == (
        f"{cfg}: lifetime_years must be above 0",
        "lifetime_years",
    )


def test_a_missing_file_names_the_config(tmp_path: Path) -> None:
    with pytest.raises(BadArgument, match=r"cannot read .*nope\.yaml") as bad:
        load_prices(tmp_path / "nope.yaml", _given(**FLAGS))
    assert (bad.value.argument, bad.value.value) == ("config", tmp_path / "nope.yaml")
