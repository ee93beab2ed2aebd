"""vllm-ledger cost: cost per million tokens over a window, and the break-even against a cloud."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from vllm_ledger.commands._common import (
    add_roots,
    add_time,
    input_file,
    number,
    roots_of,
    text,
    url,
)
from vllm_ledger.formats.cost import render_json, render_text
from vllm_ledger.plan.cost import compute
from vllm_ledger.plan.prices import SETTINGS, load_prices
from vllm_ledger.plan.usage import measure
from vllm_ledger.read.windows import WINDOW_NAMES

NAME = "cost"
HELP = "cost per million tokens (allocation and usage bases) and the break-even vs a cloud API"
EPILOG = """example:
  vllm-ledger cost --root /srv/artifacts/usage --window 7d --power-watts 475 \\
      --electricity-price 1 --hardware-price 20000 --lifetime-years 3 --ops-per-hour 0.1 \\
      --cloud-input-price 0.8 --cloud-output-price 2 --cloud-cached-price 0.2

config file (YAML; flags override it):
  electricity_price: 1.0      # per kWh
  hardware_price: 20000
  lifetime_years: 3
  ops_per_hour: 0.1
  power_watts: 475            # or prometheus: http://127.0.0.1:9090
  cloud_input_price: 0.8      # per million tokens
  cloud_output_price: 2.0
  cloud_cached_price: 0.2
  currency: CNY
"""


MAX_CONFIG_BYTES = 1024 * 1024


def _price(flag: str, example: str, hi: float = 1e9) -> Callable[[str], float]:
    """A price: zero or more, at most ``hi`` (room for any currency's figures)."""
    return number(flag, 0, hi, example, unit="a price")


def configure(p: argparse.ArgumentParser) -> None:
    add_roots(p)
    add_time(p)
    p.add_argument("--window", default="7d", choices=WINDOW_NAMES, help="the period (default 7d)")
    power = p.add_mutually_exclusive_group()
    power.add_argument(
        "--power-watts",
        type=number("--power-watts", 0, 1e6, "475", unit="watts", lo_open=True),
        metavar="W",
        help="average power of the machine, in watts",
    )
    power.add_argument(
        "--prometheus",
        type=url("--prometheus", "http://127.0.0.1:9090"),
        metavar="URL",
        help="read the average power over the window from this Prometheus",
    )
    p.add_argument(
        "--electricity-price",
        type=_price("--electricity-price", "1", 1e6),
        metavar="P",
        help="price per kWh",
    )
    p.add_argument(
        "--hardware-price",
        type=_price("--hardware-price", "20000", 1e12),
        metavar="H",
        help="what the machine cost",
    )
    p.add_argument(
        "--lifetime-years",
        type=number("--lifetime-years", 0, 50, "3", unit="years", lo_open=True),
        metavar="Y",
        help="years to depreciate over",
    )
    p.add_argument(
        "--ops-per-hour",
        type=_price("--ops-per-hour", "0.1"),
        metavar="O",
        help="operations cost per hour",
    )
    p.add_argument(
        "--cloud-input-price",
        type=_price("--cloud-input-price", "0.8"),
        metavar="P",
        help="cloud price per million input tokens",
    )
    p.add_argument(
        "--cloud-output-price",
        type=_price("--cloud-output-price", "2"),
        metavar="P",
        help="cloud price per million output tokens",
    )
    p.add_argument(
        "--cloud-cached-price",
        type=_price("--cloud-cached-price", "0.2"),
        metavar="P",
        help="cloud price per million cache-hit input tokens (default: the input price)",
    )
    p.add_argument(
        "--currency",
        type=text("--currency", "CNY", max_len=16),
        metavar="LABEL",
        help="currency label (default CNY)",
    )
    p.add_argument(
        "--config",
        type=input_file("--config", "prices.yaml", max_bytes=MAX_CONFIG_BYTES),
        metavar="FILE",
        help="YAML file with the prices",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    s = load_prices(args.config, {key: getattr(args, key) for key in SETTINGS})
    measured = measure(
        roots_of(args),
        args.window,
        power_watts=s.power_watts,
        prometheus_url=s.prometheus_url,
        at_ts=args.at,
        tz=args.tz,
    )
    cost = compute(measured.usage, s.prices, s.cloud)
    out = render_json(measured, cost) if args.json else render_text(measured, cost, args.tz)
    sys.stdout.write(out)
    return 0
