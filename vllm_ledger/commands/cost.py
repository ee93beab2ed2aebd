"""vllm-ledger cost: cost per million tokens over a window, and the break-even against a cloud."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from vllm_ledger.commands._files import input_file
from vllm_ledger.commands._ledger_flags import add_roots, roots_of
from vllm_ledger.commands._refusals import file_flag, with_flags
from vllm_ledger.commands._renamed import deprecate
from vllm_ledger.commands._times import add_time, at_of
from vllm_ledger.commands._values import number, text, url
from vllm_ledger.commands._zones import zone_of
from vllm_ledger.commands.report import EXIT_NOTHING_MATCHED, note_nothing_matched
from vllm_ledger.errors import BadArgument, ConfigError, RemoteError
from vllm_ledger.formats.cost import (
    render_json,
    render_plan_json,
    render_plan_text,
    render_text,
)
from vllm_ledger.formats.text import nothing_matched_lines
from vllm_ledger.plan.cost import PlannedLoad, compute
from vllm_ledger.plan.prices import (
    MAX_CONFIG_BYTES,
    SETTINGS,
    PriceSettings,
    config_format,
    load_prices,
)
from vllm_ledger.plan.usage import measure
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.matched import nothing_matched
from vllm_ledger.read.periods import PERIOD_NAMES
from vllm_ledger.read.zone import zone_info

NAME = "cost"
HELP = "cost per million tokens (allocation and usage bases) and the break-even vs a cloud API"
EPILOG = """example:
  vllm-ledger cost --root /srv/artifacts/usage --window 7d --power-watts 475 \\
      --electricity-price 1 --hardware-price 20000 --lifetime-years 3 --ops-per-hour 0.1 \\
      --cloud-input-price 0.8 --cloud-output-price 2 --cloud-cached-price 0.2

  vllm-ledger cost --root /srv/artifacts/usage --window last-month --config prices.toml

  # before buying: a planned load, no ledger (the worked example of docs/cost-and-capacity.md)
  vllm-ledger cost --tokens-per-day 50.4M --power-watts 475 --electricity-price 1 \\
      --hardware-price 20000 --lifetime-years 3 --ops-per-hour 0.1 \\
      --cloud-input-price 1.5 --cloud-output-price 1.5

config file, prices.toml (or the same keys in prices.json; flags override it):
  electricity_price = 1.0      # per kWh
  hardware_price = 20000
  lifetime_years = 3
  ops_per_hour = 0.1
  power_watts = 475            # or prometheus = "http://127.0.0.1:9090"
  cloud_input_price = 0.8      # per million tokens
  cloud_output_price = 2.0
  cloud_cached_price = 0.2
  currency = "CNY"
A YAML file (.yaml) is still read until the next release; TOML needs Python 3.11 or later.
exit status: 0 printed, 2 a bad flag, 3 nothing matched: no ledger under the roots (the
first line says so; with --json on stderr); see `vllm-ledger report --help`
"""


TOKEN_SUFFIXES = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}
MAX_TOKENS_PER_DAY = 1e15


def _tokens_per_day(text: str) -> int:
    """``--tokens-per-day``: a whole number of tokens, with an optional k, M or G suffix."""
    scale = TOKEN_SUFFIXES.get(text[-1:], 1.0)
    digits = text[:-1] if scale != 1.0 else text
    parse = number(
        "--tokens-per-day", 0, MAX_TOKENS_PER_DAY / scale, "50.4M", unit="tokens", lo_open=True
    )
    x = parse(digits) * scale
    n = round(x)
    if abs(x - n) > 1e-6 * max(1.0, x) or n < 1:
        raise BadArgument(
            f"--tokens-per-day {text!r} is not a whole number of tokens: e.g. "
            "--tokens-per-day 50.4M (50,400,000)"
        )
    return n


def _share(flag: str, example: str, *, lo_open: bool = False) -> Callable[[str], float]:
    return number(flag, 0, 1, example, unit="a fraction", lo_open=lo_open, fraction=True)


def _price(flag: str, example: str, hi: float = 1e9) -> Callable[[str], float]:
    """A price: zero or more, at most ``hi`` (room for any currency's figures)."""
    return number(flag, 0, hi, example, unit="a price")


class _PricesFile(argparse.Action):
    """``--config``: a .json or .toml file; a .yaml one is still read, with a deprecation note."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        try:
            kind = config_format(values)
        except ConfigError:
            raise ConfigError(
                f"--config {values}: name the file .json or .toml (the same keys as the flags, "
                "e.g. prices.toml)"
            ) from None
        if kind == "yaml":
            deprecate(
                namespace,
                "a YAML --config",
                "the same keys in TOML or JSON, e.g. --config prices.toml",
            )


def configure(p: argparse.ArgumentParser) -> None:
    _add_window(p)
    _add_power(p)
    _add_machine_prices(p)
    _add_cloud_prices(p)
    p.add_argument(
        "--config",
        type=input_file("--config", "prices.toml", max_bytes=MAX_CONFIG_BYTES),
        action=_PricesFile,
        metavar="FILE",
        help="a JSON or TOML file with the prices (.json, .toml; the keys are the flags' names "
        "with underscores)",
    )
    _add_planned_load(p)
    p.add_argument("--json", action="store_true", help="print JSON")


def _add_window(p: argparse.ArgumentParser) -> None:
    """The ledgers and the period of them to cost."""
    add_roots(p)
    add_time(p)
    p.add_argument(
        "--window",
        default=None,
        choices=PERIOD_NAMES,
        metavar="NAME",
        help="the period: " + ", ".join(PERIOD_NAMES) + " (default 7d)",
    )


def _add_power(p: argparse.ArgumentParser) -> None:
    """The machine's average power: given, or read from a Prometheus."""
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


def _add_machine_prices(p: argparse.ArgumentParser) -> None:
    """What running the machine costs: electricity, the hardware over its lifetime, operations."""
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


def _add_cloud_prices(p: argparse.ArgumentParser) -> None:
    """The cloud API's prices to break even against, and the currency label."""
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


def _add_planned_load(p: argparse.ArgumentParser) -> None:
    """--tokens-per-day and its shares: a planned load costed with no ledger."""
    plan = p.add_argument_group(
        "a planned load, with no ledger (docs/cost-and-capacity.md, 'Planning')"
    )
    plan.add_argument(
        "--tokens-per-day",
        type=_tokens_per_day,
        metavar="N",
        help="cost this many tokens a day (input + output; 50.4M, 2e6, 800k) instead of a "
        "ledger window: no --root, needs --power-watts",
    )
    plan.add_argument(
        "--input-share",
        type=_share("--input-share", "0.75"),
        metavar="F",
        help="with --tokens-per-day: the part that is input (prompt) tokens (default 0)",
    )
    plan.add_argument(
        "--cached-share",
        type=_share("--cached-share", "0.3"),
        metavar="F",
        help="with --tokens-per-day: the part of the input tokens that hit the prefix cache "
        "(default 0)",
    )
    plan.add_argument(
        "--busy-share",
        type=_share("--busy-share", "0.5", lo_open=True),
        metavar="F",
        help="with --tokens-per-day: the part of the day the machine generates; the usage "
        "basis charges electricity for it (default 1: all day)",
    )


SETTING_FLAGS = {key: "--" + key.replace("_", "-") for key in SETTINGS}
POWER_FLAGS = {"power_watts": "--power-watts W", "prometheus_url": "--prometheus URL"}


def _prices(args: argparse.Namespace) -> PriceSettings:
    """The prices of the flags over ``--config``'s; a refusal names the flags."""
    with file_flag("config", "--config FILE"):
        try:
            return load_prices(args.config, {key: getattr(args, key) for key in SETTINGS})
        except BadArgument as exc:
            # ``given``: the settings neither flagged nor in the file
            if exc.argument == "given" and isinstance(exc.value, tuple):
                flags = ", ".join(SETTING_FLAGS[key] for key in exc.value)
                raise BadArgument(
                    f"missing {flags}: give them as flags or in --config FILE"
                ) from None
            if exc.argument not in SETTING_FLAGS:
                raise
            what, hint = (with_flags(text, SETTING_FLAGS) for text in (exc.what, exc.hint))
            raise BadArgument(what, hint=hint, argument=exc.argument, value=exc.value) from None


PLAN_ONLY = ("input_share", "cached_share", "busy_share")
LEDGER_ONLY = {"root": "--root", "window": "--window", "at": "--at", "tz": "--tz"}


def _plan(args: argparse.Namespace) -> int:
    for dest, flag in LEDGER_ONLY.items():
        if getattr(args, dest) is not None:
            raise BadArgument(f"--tokens-per-day costs a planned day, not a ledger: drop {flag}")
    s = _prices(args)
    if s.power_watts is None:
        raise BadArgument(
            "--tokens-per-day needs the machine's power under load: add --power-watts W, "
            "e.g. --power-watts 475"
        )
    plan = PlannedLoad(
        args.tokens_per_day,
        input_share=args.input_share or 0.0,
        cached_share=args.cached_share or 0.0,
        busy_share=1.0 if args.busy_share is None else args.busy_share,
    )
    if plan.input_share >= 1:
        raise BadArgument("--input-share 1 leaves no output tokens: give it below 1, e.g. 0.75")
    cost = compute(plan.usage(s.power_watts), s.prices, s.cloud)
    out = render_plan_json(plan, cost) if args.json else render_plan_text(plan, cost)
    sys.stdout.write(out)
    return 0


def run(args: argparse.Namespace) -> int:
    if args.tokens_per_day is not None:
        return _plan(args)
    given = [d for d in PLAN_ONLY if getattr(args, d) is not None]
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise BadArgument(f"{flag} describes a planned load: add --tokens-per-day N")
    args.window = args.window or "7d"
    s = _prices(args)
    roots = roots_of(args)
    tz = zone_of(args, roots).name
    at_ts = at_of(args, tz)
    try:
        measured = measure(
            roots,
            args.window,
            power_watts=s.power_watts,
            prometheus_url=s.prometheus_url,
            at_ts=at_ts,
            tz=tz,
        )
    except BadArgument as exc:
        if exc.argument != "power_watts":
            raise
        raise BadArgument(with_flags(str(exc), POWER_FLAGS)) from None
    except RemoteError as exc:
        said = with_flags(str(exc), {"power_watts": "--power-watts"})
        if said == str(exc):
            raise
        raise RemoteError(said, exc.target) from None
    nm = None
    if "no_ledger" in measured.window.problems:  # only then is there nothing to name
        with LedgerSet.read(roots) as ls:
            nm = nothing_matched(ls)
    cost = compute(measured.usage, s.prices, s.cloud)
    out = render_json(measured, cost) if args.json else render_text(measured, cost, tz)
    if args.json:
        note_nothing_matched(nm, zone_info(tz))
    elif nm is not None:
        out = "\n".join([*nothing_matched_lines(nm, zone_info(tz)), ""]) + "\n" + out
    sys.stdout.write(out)
    return 0 if nm is None else EXIT_NOTHING_MATCHED
