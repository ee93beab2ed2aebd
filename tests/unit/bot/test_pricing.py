"""The digest's cost rates (bot/pricing.py): read from a price file as ``cost`` reads it, the
cached price defaulting to the input price, a file without them one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_ledger.bot.pricing import load_pricing
from vllm_ledger.bot.usage_text import Pricing
from vllm_ledger.errors import ConfigError
from vllm_ledger.plan.cost import CloudPrices


def test_the_rates_and_the_currency(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(
        '{"cloud_input_price": 2.0, "cloud_output_price": 8.0, "cloud_cached_price": 0.5, '
        '"currency": "USD"}\n'
    )
    pricing = load_pricing(path)
    assert pricing == Pricing(CloudPrices(2.0, 8.0, 0.5), "USD")
    path.write_text('{"cloud_input_price": 2.0, "cloud_output_price": 8.0}\n')
    pricing = load_pricing(path)
    assert pricing == Pricing(CloudPrices(2.0, 8.0, 2.0), "")  # cached: the input price


def test_a_file_without_the_rates_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text('{"cloud_input_price": 2.0}\n')
    with pytest.raises(ConfigError) as caught:
        load_pricing(path)
    assert str(caught.value).startswith(
        f"{path}: the digest's cost needs cloud_output_price (per million tokens; "
        "docs/cost-and-capacity.md)"
    )
