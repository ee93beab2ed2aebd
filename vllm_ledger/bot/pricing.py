"""The digest's cost: the price file's chargeback rates (``cloud_input_price``,
``cloud_output_price``, ``cloud_cached_price`` per million tokens, and ``currency``), read as
``cost`` and the budgets read them (``plan/prices.py``), the cached price defaulting to the
input price. Pure apart from reading the file."""

from __future__ import annotations

from pathlib import Path

from vllm_ledger.bot.usage_text import Pricing
from vllm_ledger.errors import ConfigError
from vllm_ledger.plan.cost import CloudPrices
from vllm_ledger.plan.prices import load_config

NEEDED = ("cloud_input_price", "cloud_output_price")


def load_pricing(path: Path) -> Pricing:
    """The rates of a price file; a one-line ``ConfigError`` when it lacks them."""
    settings = load_config(path)
    missing = [k for k in NEEDED if k not in settings]
    if missing:
        raise ConfigError(
            f"{path}: the digest's cost needs {missing[0]} (per million tokens; "
            "docs/cost-and-capacity.md)",
            missing[0],
        )
    cloud = CloudPrices(
        settings["cloud_input_price"],
        settings["cloud_output_price"],
        settings.get("cloud_cached_price", settings["cloud_input_price"]),
    )
    return Pricing(cloud, str(settings.get("currency", "")))


__all__ = ["load_pricing"]
