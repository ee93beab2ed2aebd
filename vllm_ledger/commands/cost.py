"""vllm-ledger cost: cost per million tokens over a window, and the break-even against a cloud."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from vllm_ledger.commands._common import add_roots, add_time, parse_at, roots_of
from vllm_ledger.errors import BadArgument, ConfigError, MissingExtra
from vllm_ledger.plan.cost import CloudPrices, Cost, Prices, compute
from vllm_ledger.plan.usage import Measured, measure
from vllm_ledger.read.report import resolve_tz
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

# config key -> (flag dest, type)
SETTINGS: dict[str, type] = {
    "power_watts": float,
    "prometheus": str,
    "electricity_price": float,
    "hardware_price": float,
    "lifetime_years": float,
    "ops_per_hour": float,
    "cloud_input_price": float,
    "cloud_output_price": float,
    "cloud_cached_price": float,
    "currency": str,
}
REQUIRED = ("electricity_price", "hardware_price", "lifetime_years", "ops_per_hour")


def configure(p: argparse.ArgumentParser) -> None:
    add_roots(p)
    add_time(p)
    p.add_argument("--window", default="7d", choices=WINDOW_NAMES, help="the period (default 7d)")
    power = p.add_mutually_exclusive_group()
    power.add_argument(
        "--power-watts", type=float, metavar="W", help="average power of the machine, in watts"
    )
    power.add_argument(
        "--prometheus",
        metavar="URL",
        help="read the average power over the window from this Prometheus",
    )
    p.add_argument("--electricity-price", type=float, metavar="P", help="price per kWh")
    p.add_argument("--hardware-price", type=float, metavar="H", help="what the machine cost")
    p.add_argument("--lifetime-years", type=float, metavar="Y", help="years to depreciate over")
    p.add_argument("--ops-per-hour", type=float, metavar="O", help="operations cost per hour")
    p.add_argument(
        "--cloud-input-price", type=float, metavar="P", help="cloud price per million input tokens"
    )
    p.add_argument(
        "--cloud-output-price",
        type=float,
        metavar="P",
        help="cloud price per million output tokens",
    )
    p.add_argument(
        "--cloud-cached-price",
        type=float,
        metavar="P",
        help="cloud price per million cache-hit input tokens (default: the input price)",
    )
    p.add_argument("--currency", metavar="LABEL", help="currency label (default CNY)")
    p.add_argument("--config", type=Path, metavar="FILE", help="YAML file with the prices")
    p.add_argument("--json", action="store_true", help="print JSON")


def _load_config(path: Path) -> dict[str, Any]:
    try:
        import yaml
    except ImportError as exc:
        raise MissingExtra("PyYAML", "observability") from exc
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise BadArgument(f"cannot read --config {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: fix it or pass the prices as flags") from exc
    doc = doc or {}
    if not isinstance(doc, dict):
        raise ConfigError(f"{path} must be a mapping of setting: value")
    out: dict[str, Any] = {}
    for key, value in doc.items():
        kind = SETTINGS.get(str(key))
        if kind is None:
            raise ConfigError(
                f"{path}: unknown setting {key!r}: use one of {', '.join(SETTINGS)}", str(key)
            )
        try:
            out[str(key)] = kind(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"{path}: {key} must be a {kind.__name__}, not {value!r}", str(key)
            ) from exc
    return out


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    merged: dict[str, Any] = _load_config(args.config) if args.config else {}
    for key in SETTINGS:
        value = getattr(args, key, None)
        if value is not None:
            merged[key] = value
    if "power_watts" in merged and "prometheus" in merged:
        if args.power_watts is not None:
            merged.pop("prometheus")
        elif args.prometheus is not None:
            merged.pop("power_watts")
    missing = [k for k in REQUIRED if k not in merged]
    if missing:
        flags = ", ".join("--" + k.replace("_", "-") for k in missing)
        raise BadArgument(f"missing {flags}: give them as flags or in --config FILE")
    for key in ("electricity_price", "hardware_price", "ops_per_hour", "power_watts"):
        if key in merged and merged[key] < 0:
            raise BadArgument(f"--{key.replace('_', '-')} must not be negative")
    if merged["lifetime_years"] <= 0:
        raise BadArgument("--lifetime-years must be above 0")
    return merged


def _cloud(s: dict[str, Any]) -> CloudPrices | None:
    given = [k for k in ("cloud_input_price", "cloud_output_price", "cloud_cached_price") if k in s]
    if not given:
        return None
    if "cloud_input_price" not in s or "cloud_output_price" not in s:
        raise BadArgument(
            "the break-even needs both --cloud-input-price and --cloud-output-price "
            "(per million tokens; --cloud-cached-price defaults to the input price)"
        )
    return CloudPrices(
        s["cloud_input_price"],
        s["cloud_output_price"],
        s.get("cloud_cached_price", s["cloud_input_price"]),
    )


def _money(x: float | None) -> str:
    return "-" if x is None else f"{x:,.2f}"


def _amount(x: float) -> str:
    """A period's cost: to the cent, with more places when that would read 0.00."""
    return f"{x:,.2f}" if abs(x) >= 1 else f"{x:.6f}".rstrip("0").rstrip(".") or "0"


def _mtok(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x / 1e6:,.2f} M" if x >= 100_000 else f"{x:,.0f}"


def _when(ts: int, tz: str) -> str:
    return datetime.fromtimestamp(ts, resolve_tz(tz)).isoformat(timespec="seconds")


def render_text(m: Measured, c: Cost, tz: str) -> str:
    u, w, cur = m.usage, m.window, c.prices.currency
    power = "given" if m.power_source == "given" else f"Prometheus: {m.power_source}"
    lines = [
        f"window {w.name}: {_when(w.start_ts, tz)} .. {_when(w.cutoff_ts, tz)} "
        f"({u.wall_seconds:,.0f} s = {u.hours:,.2f} h), amounts in {cur}",
        f"tokens: input {u.input_tokens:,}, output {u.output_tokens:,}, "
        f"cached {u.cached_tokens:,} (total {u.total_tokens:,})",
    ]
    if u.lower_bound:
        lines.append(
            f"coverage: {u.uncovered_seconds:,.0f} s of {u.wall_seconds:,.0f} s "
            "uncovered: the token counts are a LOWER BOUND of usage, so the "
            "per-million costs below are upper bounds"
        )
    else:
        lines.append("coverage: complete (0 s uncovered)")
    busy = f"busy {u.busy_seconds:,.0f} s (seconds with output > 0"
    if m.busy_resolution_s == 1:
        busy += ")"
    else:
        busy += f", counted by {m.busy_resolution_s} s: an upper bound)"
    lines += [
        f"power: {u.power_watts:,.1f} W ({power}); {busy}",
        f"per hour: electricity {c.electricity_per_hour:.4f} + depreciation "
        f"{c.depreciation_per_hour:.4f} + operations {c.ops_per_hour:.4f} = {c.per_hour:.4f}",
        "",
        f"{'basis':<12}{'period cost':>14}{'per M output':>16}{'per M total':>16}",
        f"{'allocation':<12}{_amount(c.allocation_cost):>14}"
        f"{_money(c.allocation_per_million_output):>16}{_money(c.allocation_per_million_total):>16}",
        f"{'usage':<12}{_amount(c.usage_cost):>14}"
        f"{_money(c.usage_per_million_output):>16}{_money(c.usage_per_million_total):>16}",
        "  allocation: every hour of the window, idle included; usage: electricity of busy seconds",
    ]
    be = c.break_even
    if be is not None:
        lines += [
            "",
            f"cloud: this traffic would cost {_amount(be.cloud_cost)}: "
            f"{_money(be.cloud_per_million_output)} per M output "
            f"({_money(be.cloud_per_million_total)} per M total) at this input/output/cached mix",
            f"break-even: daily fixed cost {_money(be.daily_fixed_cost)} / (cloud "
            f"{_money(be.cloud_per_million_output)} - local marginal "
            f"{_money(be.marginal_per_million_output)}) per M output",
        ]
        if be.output_tokens_per_day is None:
            lines.append(
                "  no break-even: the cloud is not dearer than local electricity alone"
                if be.cloud_per_million_output is not None
                else "  no break-even: no output tokens in the window"
            )
        else:
            lines.append(
                f"  = {_mtok(be.output_tokens_per_day)} output tokens/day "
                f"({_mtok(be.total_tokens_per_day)} total tokens/day); this window "
                f"averaged {_mtok(be.current_output_tokens_per_day)} output tokens/day"
            )
    return "\n".join(lines) + "\n"


def _r(x: float | None, digits: int = 6) -> float | None:
    return None if x is None else round(x, digits)


def render_json(m: Measured, c: Cost) -> str:
    u, be = m.usage, c.break_even
    doc: dict[str, Any] = {
        "window": {"name": m.window.name, "start": m.window.start_ts, "cutoff": m.window.cutoff_ts},
        "currency": c.prices.currency,
        "wall_seconds": u.wall_seconds,
        "hours": u.hours,
        "tokens": {
            "input": u.input_tokens,
            "output": u.output_tokens,
            "cached": u.cached_tokens,
            "total": u.total_tokens,
        },
        "uncovered_seconds": u.uncovered_seconds,
        "lower_bound": u.lower_bound,
        "power_watts": _r(u.power_watts),
        "power_source": m.power_source,
        "busy_seconds": u.busy_seconds,
        "busy_resolution_seconds": m.busy_resolution_s,
        "per_hour": {
            "electricity": _r(c.electricity_per_hour),
            "depreciation": _r(c.depreciation_per_hour),
            "operations": _r(c.ops_per_hour),
        },
        "allocation": {
            "cost": _r(c.allocation_cost),
            "per_million_output": _r(c.allocation_per_million_output),
            "per_million_total": _r(c.allocation_per_million_total),
        },
        "usage": {
            "cost": _r(c.usage_cost),
            "per_million_output": _r(c.usage_per_million_output),
            "per_million_total": _r(c.usage_per_million_total),
        },
        "break_even": None,
    }
    if be is not None:
        doc["break_even"] = {
            "cloud_cost": _r(be.cloud_cost),
            "cloud_per_million_output": _r(be.cloud_per_million_output),
            "cloud_per_million_total": _r(be.cloud_per_million_total),
            "daily_fixed_cost": _r(be.daily_fixed_cost),
            "marginal_per_million_output": _r(be.marginal_per_million_output),
            "output_tokens_per_day": _r(be.output_tokens_per_day, 1),
            "total_tokens_per_day": _r(be.total_tokens_per_day, 1),
            "current_output_tokens_per_day": _r(be.current_output_tokens_per_day, 1),
        }
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def run(args: argparse.Namespace) -> int:
    s = _settings(args)
    prices = Prices(
        s["electricity_price"],
        s["hardware_price"],
        s["lifetime_years"],
        s["ops_per_hour"],
        s.get("currency", "CNY"),
    )
    cloud = _cloud(s)
    measured = measure(
        roots_of(args),
        args.window,
        power_watts=s.get("power_watts"),
        prometheus_url=s.get("prometheus"),
        at_ts=parse_at(args.at),
        tz=args.tz,
    )
    cost = compute(measured.usage, prices, cloud)
    out = render_json(measured, cost) if args.json else render_text(measured, cost, args.tz)
    sys.stdout.write(out)
    return 0
