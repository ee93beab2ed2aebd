"""Budgets per key, adapter, user or tenant: the config file, checked once, and where each
budget stands in its period. Pure apart from reading the file.

The file (JSON or TOML, docs/budgets.md)::

    zone = "Asia/Shanghai"          # optional: else the report's zone rule
    enforce = true                  # hard budgets answer 429 (each may say otherwise)
    prices = "/etc/vllm-ledger/prices.toml"   # only for cost budgets

    [[budget]]
    key = "team-a"                  # exactly one of key, adapter, user, tenant
    period = "day"                  # day or month, in the zone
    tokens = 2_000_000              # or cost = 12.5 (in the price file's currency)
    figure = "total"                # input, output or total (tokens budgets)
    soft = 0.8                      # default 0.8: a chat message
    hard = 1.0                      # default 1.0: a message, and 429 where enforced

A budget counts what the ledger credited to its label in the period (finished requests, at
their finish second: ``read/whose.py``); tokens of requests that ended unfinished are not
credited to anyone, so they are not in a budget's figure (docs/budgets.md says so). A cost
budget prices them at the price file's ``cloud_input_price``, ``cloud_cached_price`` and
``cloud_output_price`` per million tokens (chargeback rates).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

from vllm_ledger.errors import ConfigError
from vllm_ledger.plan.prices import load_config, read_document
from vllm_ledger.read.attribution import FileCredits
from vllm_ledger.read.periods import next_edge, period
from vllm_ledger.read.windows import Window
from vllm_ledger.strictjson import is_number

Kind = Literal["key", "adapter", "user", "tenant"]
Period = Literal["day", "month"]
Figure = Literal["input", "output", "total", "cost"]
Level = Literal["ok", "soft", "hard"]
KINDS: tuple[Kind, ...] = ("key", "adapter", "user", "tenant")
PERIODS: tuple[Period, ...] = ("day", "month")
FIGURES: tuple[str, ...] = ("input", "output", "total")
MAX_BUDGETS = 1000
_PLACE = {"key": 0, "adapter": 1, "user": 2, "tenant": 3}
_TOP = {"zone", "enforce", "prices", "budget"}
_FIELDS = {*KINDS, "name", "period", "tokens", "cost", "figure", "soft", "hard", "enforce"}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@:+-]{0,63}")


@dataclass(frozen=True)
class Rates:
    """Chargeback prices per million tokens, from the price file."""

    input: float
    cached: float
    output: float
    currency: str = ""


@dataclass(frozen=True)
class Budget:
    name: str
    kind: Kind
    value: str
    period: Period
    figure: Figure
    limit: float  # tokens, or money for ``cost``
    soft: float = 0.8
    hard: float = 1.0
    enforce: bool = False


@dataclass(frozen=True)
class BudgetConfig:
    budgets: tuple[Budget, ...]
    zone: str | None = None
    rates: Rates | None = None
    path: str = ""


@dataclass(frozen=True)
class BudgetState:
    """Where a budget stands: used so far in its period, the fraction of its limit, the level
    reached and the projection to the period's end at the period's rate so far."""

    budget: Budget
    period_start_ts: int
    period_end_ts: int
    at_ts: int
    used: float
    fraction: float
    level: Level
    projected: float | None  # None: too early in the period to say (under a minute)


def load_budgets(path: Path) -> BudgetConfig:
    """The budgets of a JSON or TOML file; one-line ``ConfigError`` naming what is wrong."""
    doc = read_document(path)
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: must be a mapping with [[budget]] entries (docs/budgets.md)")
    unknown = set(doc) - _TOP
    if unknown:
        raise ConfigError(
            f"{path}: unknown setting {sorted(unknown)[0]!r}: use zone, enforce, prices, budget"
        )
    zone = doc.get("zone")
    if zone is not None:
        if not isinstance(zone, str):
            raise ConfigError(f"{path}: zone must be a time zone name, e.g. Asia/Shanghai", "zone")
        try:
            ZoneInfo(zone)
        except (ValueError, KeyError) as exc:
            raise ConfigError(f"{path}: zone {zone!r} is not a known time zone", "zone") from exc
    enforce = doc.get("enforce", False)
    if not isinstance(enforce, bool):
        raise ConfigError(f"{path}: enforce must be true or false", "enforce")
    entries = doc.get("budget", [])
    if not isinstance(entries, list) or not entries or len(entries) > MAX_BUDGETS:
        raise ConfigError(f"{path}: give 1 to {MAX_BUDGETS} [[budget]] entries", "budget")
    budgets = [_budget(path, i, e, enforce) for i, e in enumerate(entries)]
    names = [b.name for b in budgets]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise ConfigError(f"{path}: two budgets are named {dup!r}: name them apart", "name")
    rates = None
    if any(b.figure == "cost" for b in budgets):
        rates = _rates(path, doc.get("prices"))
    return BudgetConfig(tuple(budgets), zone, rates, str(path))


def _budget(path: Path, i: int, e: Any, enforce: bool) -> Budget:
    where = f"{path}: budget {i + 1}"
    if not isinstance(e, dict):
        raise ConfigError(f"{where} is not a table of settings", "budget")
    unknown = set(e) - _FIELDS
    if unknown:
        raise ConfigError(f"{where}: unknown setting {sorted(unknown)[0]!r}", "budget")
    kinds = [k for k in KINDS if k in e]
    if len(kinds) != 1:
        raise ConfigError(f"{where}: name exactly one of key, adapter, user, tenant", "budget")
    kind = kinds[0]
    value = e[kind]
    if not isinstance(value, str) or not 0 < len(value) <= 256 or not value.isprintable():
        raise ConfigError(f"{where}: {kind} must be the label the report shows", kind)
    per = e.get("period", "day")
    if per not in PERIODS:
        raise ConfigError(f"{where}: period must be day or month, not {per!r}", "period")
    if ("tokens" in e) == ("cost" in e):
        raise ConfigError(f"{where}: give a limit as tokens = N or cost = N (one of them)", kind)
    if "cost" in e:
        figure: Figure = "cost"
        limit = _number(where, "cost", e["cost"], 1e12)
        if "figure" in e:
            raise ConfigError(f"{where}: a cost budget prices every figure: drop figure", "figure")
    else:
        fig = e.get("figure", "total")
        if fig not in FIGURES:
            raise ConfigError(f"{where}: figure must be input, output or total", "figure")
        figure = fig
        limit = _number(where, "tokens", e["tokens"], 1e15)
    soft = _number(where, "soft", e.get("soft", 0.8), 10.0)
    hard = _number(where, "hard", e.get("hard", 1.0), 10.0)
    if not 0 < soft <= hard:
        raise ConfigError(f"{where}: soft must be above 0 and at most hard (e.g. 0.8, 1.0)", "soft")
    name = e.get("name", f"{kind}-{value}-{per}")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(f"{where}: name must be 1-64 letters, digits or ._@:+-", "name")
    own = e.get("enforce", enforce)
    if not isinstance(own, bool):
        raise ConfigError(f"{where}: enforce must be true or false", "enforce")
    return Budget(name, kind, value, per, figure, limit, soft, hard, own)


def _number(where: str, key: str, value: Any, most: float) -> float:
    if not is_number(value) or not 0 < value <= most:
        raise ConfigError(f"{where}: {key} must be a number above 0 and at most {most:g}", key)
    return float(value)


def _rates(path: Path, prices: Any) -> Rates:
    if not isinstance(prices, str):
        raise ConfigError(f'{path}: a cost budget needs prices = "PATH" (the price file)', "prices")
    settings = load_config(Path(prices))
    need = ("cloud_input_price", "cloud_output_price")
    missing = [k for k in need if k not in settings]
    if missing:
        raise ConfigError(
            f"{prices}: a cost budget needs {missing[0]} (per million tokens)", missing[0]
        )
    return Rates(
        input=settings["cloud_input_price"],
        cached=settings.get("cloud_cached_price", settings["cloud_input_price"]),
        output=settings["cloud_output_price"],
        currency=str(settings.get("currency", "")),
    )


def period_window(budget: Budget, at_ts: int, tz: ZoneInfo) -> tuple[Window, int]:
    """The budget's period so far ``[start, at_ts)`` and where the period ends."""
    w = period("today" if budget.period == "day" else "this-month", at_ts, tz, None)
    return w, next_edge(w.start_ts, budget.period, tz)


def used(budget: Budget, credits: FileCredits, rates: Rates | None) -> float:
    """What the budget's label was credited in these credits, in the budget's figure."""
    place = _PLACE[budget.kind]
    inp = out = cached = 0
    counts = credits.values(place).get("", {}).get(budget.value)
    if counts is not None:
        inp, out, cached = counts[0], counts[1], counts[2]
    if budget.figure == "input":
        return float(inp)
    if budget.figure == "output":
        return float(out)
    if budget.figure == "total":
        return float(inp + out)
    assert rates is not None
    return ((inp - cached) * rates.input + cached * rates.cached + out * rates.output) / 1e6


def evaluate(
    config: BudgetConfig,
    credits_for: Callable[[Window, Kind], FileCredits],
    at_ts: int,
    tz: ZoneInfo,
) -> list[BudgetState]:
    """Each budget's state at ``at_ts``: its period's credits by its kind of label from
    ``credits_for`` (asked once per distinct period and kind)."""
    memo: dict[tuple[int, int, str], FileCredits] = {}
    out = []
    for b in config.budgets:
        w, end = period_window(b, at_ts, tz)
        key = (w.start_ts, w.cutoff_ts, b.kind)
        if key not in memo:
            memo[key] = credits_for(w, b.kind)
        got = used(b, memo[key], config.rates)
        fraction = got / b.limit
        level: Level = "hard" if fraction >= b.hard else "soft" if fraction >= b.soft else "ok"
        elapsed = at_ts - w.start_ts
        projected = got * (end - w.start_ts) / elapsed if elapsed >= 60 else None
        out.append(BudgetState(b, w.start_ts, end, at_ts, got, fraction, level, projected))
    return out


def over_entries(states: list[BudgetState]) -> list[tuple[Kind, str, int, str]]:
    """(kind, value, period end, budget) of each enforced budget at its hard level."""
    return [
        (s.budget.kind, s.budget.value, s.period_end_ts, s.budget.name)
        for s in states
        if s.level == "hard" and s.budget.enforce
    ]


def zone_of(config: BudgetConfig, fallback: str) -> ZoneInfo:
    return ZoneInfo(config.zone or fallback)


__all__ = [
    "Budget",
    "BudgetConfig",
    "BudgetState",
    "Rates",
    "evaluate",
    "load_budgets",
    "over_entries",
    "period_window",
    "used",
    "zone_of",
]
