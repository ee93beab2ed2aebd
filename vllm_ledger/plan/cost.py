"""Cost per million tokens and the break-even daily volume against a cloud price. Pure.

The model (docs/cost-and-capacity.md#cost): cost per million tokens = the period's cost divided
by the period's tokens, the period's cost being electricity (average power x price), hardware
depreciation (price / lifetime) and operations, each per hour, times the hours of the period.
Two bases:

- allocation: every hour of the period, idle included (what the bill says);
- usage: the marginal electricity of the busy seconds only (the "local marginal
  price": what one more token costs once the machine is paid for).

Break-even: running locally pays when cloud price x daily volume > daily fixed cost + marginal
electricity, so the break-even daily volume = daily fixed cost / (cloud price - local marginal
price). Cloud prices are per million input, output and cached (cache-hit) input tokens, turned
into one equivalent price per million output tokens with the service's own mix.
"""

from __future__ import annotations

from dataclasses import dataclass

from vllm_ledger.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

HOURS_PER_YEAR = 8760
MILLION = 1_000_000


@dataclass(frozen=True)
class Prices:
    """What the machine costs to buy and to run; amounts in ``currency`` (a label only)."""

    electricity_per_kwh: float
    hardware_price: float
    lifetime_years: float
    ops_per_hour: float
    currency: str = "CNY"

    @property
    def depreciation_per_hour(self) -> float:
        return self.hardware_price / (self.lifetime_years * HOURS_PER_YEAR)

    @property
    def fixed_per_hour(self) -> float:
        """Depreciation and operations: paid whether the machine works or idles."""
        return self.depreciation_per_hour + self.ops_per_hour

    def electricity_per_hour(self, power_watts: float) -> float:
        return power_watts / 1000 * self.electricity_per_kwh


@dataclass(frozen=True)
class CloudPrices:
    """A cloud API's list prices per million tokens; cached = a cache-hit input token."""

    input_per_million: float
    output_per_million: float
    cached_per_million: float

    def cost_of(self, input_tokens: int, output_tokens: int, cached_tokens: int) -> float:
        """What the cloud would charge for this traffic (cached tokens are part of input)."""
        uncached = max(0, input_tokens - cached_tokens)
        return (
            uncached * self.input_per_million
            + cached_tokens * self.cached_per_million
            + output_tokens * self.output_per_million
        ) / MILLION


@dataclass(frozen=True)
class Usage:
    """What was measured over the period."""

    wall_seconds: float
    busy_seconds: float
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    power_watts: float
    uncovered_seconds: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def hours(self) -> float:
        return self.wall_seconds / SECONDS_PER_HOUR

    @property
    def busy_hours(self) -> float:
        return self.busy_seconds / SECONDS_PER_HOUR

    @property
    def lower_bound(self) -> bool:
        """Tokens are a lower bound of usage when part of the period is not vouched for."""
        return self.uncovered_seconds > 0


@dataclass(frozen=True)
class BreakEven:
    cloud_cost: float  # what the cloud would have charged for the period's traffic
    cloud_per_million_output: float | None  # the mix as one price per million output tokens
    cloud_per_million_total: float | None
    daily_fixed_cost: float
    marginal_per_million_output: float | None
    output_tokens_per_day: float | None  # None: the cloud is never dearer than local marginal
    total_tokens_per_day: float | None
    current_output_tokens_per_day: float | None


@dataclass(frozen=True)
class Cost:
    usage: Usage
    prices: Prices
    electricity_per_hour: float
    depreciation_per_hour: float
    ops_per_hour: float
    allocation_cost: float  # the whole period, idle included
    usage_cost: float  # electricity of the busy seconds only
    allocation_per_million_output: float | None
    allocation_per_million_total: float | None
    usage_per_million_output: float | None
    usage_per_million_total: float | None
    break_even: BreakEven | None

    @property
    def per_hour(self) -> float:
        return self.electricity_per_hour + self.depreciation_per_hour + self.ops_per_hour


def per_million(cost: float, tokens: float) -> float | None:
    """Cost per million tokens; None when no token was produced."""
    return cost / (tokens / MILLION) if tokens > 0 else None


def break_even_tokens_per_day(
    daily_fixed_cost: float, cloud_per_million: float, marginal_per_million: float
) -> float | None:
    """Daily volume above which local is cheaper; None when the cloud never costs more."""
    margin = cloud_per_million - marginal_per_million
    if margin <= 0:
        return None
    return daily_fixed_cost / margin * MILLION


def _break_even(
    usage: Usage, prices: Prices, cloud: CloudPrices, marginal_per_million_output: float | None
) -> BreakEven:
    cloud_cost = cloud.cost_of(usage.input_tokens, usage.output_tokens, usage.cached_tokens)
    cloud_out = per_million(cloud_cost, usage.output_tokens)
    cloud_total = per_million(cloud_cost, usage.total_tokens)
    daily_fixed = prices.fixed_per_hour * 24
    out_per_day = None
    if cloud_out is not None and marginal_per_million_output is not None:
        out_per_day = break_even_tokens_per_day(daily_fixed, cloud_out, marginal_per_million_output)
    total_per_day = None
    if out_per_day is not None and usage.output_tokens > 0:
        total_per_day = out_per_day * usage.total_tokens / usage.output_tokens
    days = usage.wall_seconds / 86400
    return BreakEven(
        cloud_cost=cloud_cost,
        cloud_per_million_output=cloud_out,
        cloud_per_million_total=cloud_total,
        daily_fixed_cost=daily_fixed,
        marginal_per_million_output=marginal_per_million_output,
        output_tokens_per_day=out_per_day,
        total_tokens_per_day=total_per_day,
        current_output_tokens_per_day=usage.output_tokens / days if days > 0 else None,
    )


@dataclass(frozen=True)
class PlannedLoad:
    """A day of planned traffic, for costing before there is a ledger (``cost --tokens-per-day``).

    ``input_share``: the part of the tokens that are input (prompt) tokens; ``cached_share``: the
    part of the input tokens that hit the prefix cache; ``busy_share``: the part of the day the
    machine is generating, which the usage basis charges electricity for (1: all day, the
    worked example's assumption).
    """

    tokens_per_day: int
    input_share: float = 0.0
    cached_share: float = 0.0
    busy_share: float = 1.0

    @property
    def input_tokens(self) -> int:
        return round(self.tokens_per_day * self.input_share)

    @property
    def output_tokens(self) -> int:
        return self.tokens_per_day - self.input_tokens

    @property
    def cached_tokens(self) -> int:
        return round(self.input_tokens * self.cached_share)

    def usage(self, power_watts: float) -> Usage:
        """One day of this load as a measured ``Usage`` (fully covered: it is a plan)."""
        return Usage(
            wall_seconds=SECONDS_PER_DAY,
            busy_seconds=SECONDS_PER_DAY * self.busy_share,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_tokens=self.cached_tokens,
            power_watts=power_watts,
        )


def compute(usage: Usage, prices: Prices, cloud: CloudPrices | None = None) -> Cost:
    """Both bases per million output and total tokens, and the break-even when priced."""
    elec = prices.electricity_per_hour(usage.power_watts)
    allocation = usage.hours * (elec + prices.fixed_per_hour)
    marginal = usage.busy_hours * elec
    usage_out = per_million(marginal, usage.output_tokens)
    return Cost(
        usage=usage,
        prices=prices,
        electricity_per_hour=elec,
        depreciation_per_hour=prices.depreciation_per_hour,
        ops_per_hour=prices.ops_per_hour,
        allocation_cost=allocation,
        usage_cost=marginal,
        allocation_per_million_output=per_million(allocation, usage.output_tokens),
        allocation_per_million_total=per_million(allocation, usage.total_tokens),
        usage_per_million_output=usage_out,
        usage_per_million_total=per_million(marginal, usage.total_tokens),
        break_even=None if cloud is None else _break_even(usage, prices, cloud, usage_out),
    )


__all__ = [
    "BreakEven",
    "CloudPrices",
    "Cost",
    "PlannedLoad",
    "Prices",
    "Usage",
    "break_even_tokens_per_day",
    "compute",
    "per_million",
]
