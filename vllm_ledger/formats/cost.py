"""The forms of a cost: the terminal text and JSON of a ``Measured`` window and its ``Cost``.

Each function takes the built models (``plan.usage.Measured``, ``plan.cost.Cost``) and returns
a string; none reads a ledger, a config file or Prometheus.
"""

from __future__ import annotations

import json
from typing import Any

from vllm_ledger.formats.json import round_or_none
from vllm_ledger.formats.table import pad
from vllm_ledger.plan.cost import BreakEven, Cost, PlannedLoad
from vllm_ledger.plan.partial import told_json, told_lines
from vllm_ledger.plan.usage import PARTIAL_DOC, POWER_MISSING, Measured
from vllm_ledger.read.report import resolve_tz
from vllm_ledger.units import format_duration, format_instant


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
    return format_instant(ts, resolve_tz(tz))


_MONEY_WIDTHS = (14, 16, 16)  # after the basis, 12 wide on the left


def _money_row(basis: str, *amounts: str) -> str:
    """One row of the money table: fixed widths, the amounts on the right."""
    cells = (pad(a, w, right=True) for a, w in zip(amounts, _MONEY_WIDTHS, strict=True))
    return pad(basis, 12) + "".join(cells)


def _money_lines(c: Cost, cost_header: str, period: str) -> list[str]:
    return [
        f"per hour: electricity {c.electricity_per_hour:.4f} + depreciation "
        f"{c.depreciation_per_hour:.4f} + operations {c.ops_per_hour:.4f} = {c.per_hour:.4f}",
        "",
        _money_row("basis", cost_header, "per M output", "per M total"),
        _money_row(
            "allocation",
            _amount(c.allocation_cost),
            _money(c.allocation_per_million_output),
            _money(c.allocation_per_million_total),
        ),
        _money_row(
            "usage",
            _amount(c.usage_cost),
            _money(c.usage_per_million_output),
            _money(c.usage_per_million_total),
        ),
        f"  allocation: every hour of {period}, idle included; usage: electricity of busy seconds",
    ]


def _break_even_lines(be: BreakEven, would: str, no_output: str, current: str) -> list[str]:
    lines = [
        "",
        f"cloud: {would.format(_amount(be.cloud_cost))}: "
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
            else "  no break-even: " + no_output
        )
    else:
        lines.append(
            f"  = {_mtok(be.output_tokens_per_day)} output tokens/day "
            f"({_mtok(be.total_tokens_per_day)} total tokens/day); {current} "
            f"{_mtok(be.current_output_tokens_per_day)} output tokens/day"
        )
    return lines


def render_plan_text(plan: PlannedLoad, c: Cost) -> str:
    """A planned day of traffic (``cost --tokens-per-day``): the same figures, no window."""
    u = c.usage
    lines = [
        f"planned load: {plan.tokens_per_day:,} tokens/day: input {u.input_tokens:,}, "
        f"output {u.output_tokens:,}, cached {u.cached_tokens:,}; amounts in {c.prices.currency}",
        f"power: {u.power_watts:,.1f} W (given); busy {u.busy_hours:,.2f} h a day "
        f"(--busy-share {plan.busy_share:g})",
        *_money_lines(c, "cost per day", "the day"),
    ]
    be = c.break_even
    if be is not None:
        lines += _break_even_lines(
            be, "this load would cost {} a day", "the plan has no output tokens", "the plan is"
        )
    return "\n".join(lines) + "\n"


def _power_told_lines(m: Measured) -> list[str]:
    """Where the store called a power answer partial or gave a warning with it: the power is
    not complete, nor what rests on it, and each answer is named in the store's words."""
    if not m.power_told:
        return []
    return [
        "power: INCOMPLETE: read from an answer the store called partial or gave a warning "
        "with; the electricity, both bases and the break-even rest on it, so they are not "
        "complete figures either",
        *(f"  {line}" for line in told_lines(m.power_told, POWER_MISSING, PARTIAL_DOC)),
    ]


def render_text(m: Measured, c: Cost, tz: str) -> str:
    u, w, cur = m.usage, m.window, c.prices.currency
    power = "given" if m.power_source == "given" else f"Prometheus: {m.power_source}"
    lines = [
        f"window {w.name}: {_when(w.start_ts, tz)} .. {_when(w.cutoff_ts, tz)} "
        f"({format_duration(u.wall_seconds, 'words')} = {u.hours:,.2f} h), amounts in {cur}",
        f"tokens: input {u.input_tokens:,}, output {u.output_tokens:,}, "
        f"cached {u.cached_tokens:,} (total {u.total_tokens:,})",
    ]
    if u.lower_bound:
        lines.append(
            f"coverage: {format_duration(u.uncovered_seconds, 'words')} of "
            f"{format_duration(u.wall_seconds, 'words')} uncovered: the token counts are a "
            "LOWER BOUND of usage, so the per-million costs below are upper bounds"
        )
    else:
        lines.append("coverage: complete (0 s uncovered)")
    busy = f"busy {format_duration(u.busy_seconds, 'words')} (seconds with output > 0"
    if m.busy_resolution_s == 1:
        busy += ")"
    else:
        busy += f", counted by {m.busy_resolution_s} s: an upper bound)"
    lines += [
        f"power: {u.power_watts:,.1f} W ({power}); {busy}",
        *_power_told_lines(m),
        *_money_lines(c, "period cost", "the window"),
    ]
    be = c.break_even
    if be is not None:
        lines += _break_even_lines(
            be,
            "this traffic would cost {}",
            "no output tokens in the window",
            "this window averaged",
        )
    return "\n".join(lines) + "\n"


def _money_dict(c: Cost) -> dict[str, Any]:
    be = c.break_even
    doc: dict[str, Any] = {
        "per_hour": {
            "electricity": round_or_none(c.electricity_per_hour),
            "depreciation": round_or_none(c.depreciation_per_hour),
            "operations": round_or_none(c.ops_per_hour),
        },
        "allocation": {
            "cost": round_or_none(c.allocation_cost),
            "per_million_output": round_or_none(c.allocation_per_million_output),
            "per_million_total": round_or_none(c.allocation_per_million_total),
        },
        "usage": {
            "cost": round_or_none(c.usage_cost),
            "per_million_output": round_or_none(c.usage_per_million_output),
            "per_million_total": round_or_none(c.usage_per_million_total),
        },
        "break_even": None,
    }
    if be is not None:
        doc["break_even"] = {
            "cloud_cost": round_or_none(be.cloud_cost),
            "cloud_per_million_output": round_or_none(be.cloud_per_million_output),
            "cloud_per_million_total": round_or_none(be.cloud_per_million_total),
            "daily_fixed_cost": round_or_none(be.daily_fixed_cost),
            "marginal_per_million_output": round_or_none(be.marginal_per_million_output),
            "output_tokens_per_day": round_or_none(be.output_tokens_per_day, 1),
            "total_tokens_per_day": round_or_none(be.total_tokens_per_day, 1),
            "current_output_tokens_per_day": round_or_none(be.current_output_tokens_per_day, 1),
        }
    return doc


def cost_dict(m: Measured, c: Cost) -> dict[str, Any]:
    u = m.usage
    return {
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
        "power_watts": round_or_none(u.power_watts),
        "power_source": m.power_source,
        "power_complete": not m.power_told,
        "partial_answers": told_json(m.said),
        "busy_seconds": u.busy_seconds,
        "busy_resolution_seconds": m.busy_resolution_s,
        **_money_dict(c),
    }


def render_json(m: Measured, c: Cost) -> str:
    return json.dumps(cost_dict(m, c), indent=2, allow_nan=False) + "\n"


def plan_dict(plan: PlannedLoad, c: Cost) -> dict[str, Any]:
    """The JSON of a planned day: the load, then the same money figures as ``cost_dict``."""
    u = c.usage
    doc: dict[str, Any] = {
        "plan": {
            "tokens_per_day": plan.tokens_per_day,
            "input_share": plan.input_share,
            "cached_share": plan.cached_share,
            "busy_share": plan.busy_share,
        },
        "currency": c.prices.currency,
        "tokens": {
            "input": u.input_tokens,
            "output": u.output_tokens,
            "cached": u.cached_tokens,
            "total": u.total_tokens,
        },
        "power_watts": round_or_none(u.power_watts),
        "busy_seconds": u.busy_seconds,
    }
    doc.update(_money_dict(c))
    return doc


def render_plan_json(plan: PlannedLoad, c: Cost) -> str:
    return json.dumps(plan_dict(plan, c), indent=2, allow_nan=False) + "\n"


__all__ = [
    "cost_dict",
    "plan_dict",
    "render_json",
    "render_plan_json",
    "render_plan_text",
    "render_text",
]
