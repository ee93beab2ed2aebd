"""The status document's budgets (``budgets``): where each of the host's budgets stands, for the
notifier's soft and hard messages (docs/budgets.md). Standard library.

``budgets_dict(states)`` makes it from ``plan.budgets.evaluate``'s states: per budget its name,
who (``kind`` and ``value``), the figure, the limit, what was used so far in the period, the
fraction of the limit, the thresholds and the level reached (``ok``, ``soft``, ``hard``), the
period (``start``, ``end``: host Unix seconds) and the projection to its end at the rate so far
(null in the period's first minute). Rows go hard first, then soft, then the rest, each by the
fraction used; at most ``MAX_STATUS_BUDGETS``, the rest counted in ``truncated`` (and those
of them at soft or hard in ``truncated_over``). A value is written only if it has the shape
the document allows its labels (``status_keys.VALUE_SHAPE``); any other (a user id with a
space, a tenant with a colon) is written as null: the budget's own name still says which.
``problem`` is ``config`` when the host names a budgets file it cannot use (the document's
figures still come); ``tz_offset`` is the budgets' zone (their days and months) east of UTC
at the document's instant, so a message shows a period's edges on that zone's clock. Bounded
by construction: at most ``MAX_BUDGETS_BYTES`` (tested with every field at its longest).

``parse_budgets(doc)`` is the notifier's side, on bytes from a host that may be hostile:
``None`` when the document has no ``budgets``, a ``StatusBudgets`` of range-checked numbers,
our own constants and shape-checked names, or ``StatusParseError``. A row whose level does
not follow from its fraction and thresholds, or whose fraction is not its used over its limit,
is refused with the whole document.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vllm_ledger.errors import StatusParseError
from vllm_ledger.formats.status_keys import VALUE_SHAPE
from vllm_ledger.plan.budgets import FIGURES as TOKEN_FIGURES
from vllm_ledger.plan.budgets import KINDS, BudgetState
from vllm_ledger.strictjson import is_number, whole_in

MAX_STATUS_BUDGETS = 16
MAX_BUDGETS_BYTES = 6 * 1024
MAX_LIMIT = 10**15  # tokens (a cost limit is at most 10^12)
MAX_USED = 10**18  # a cost of 10^15 tokens at a price per million of up to 10^3
MAX_FRACTION = 10**6
MAX_THRESHOLD = 10.0
MAX_TZ_OFFSET_S = 18 * 3600
MIN_TS = 10**9  # as formats/status.py: 2001 .. 2286
MAX_TS = 10**10
LEVELS: tuple[str, ...] = ("ok", "soft", "hard")
BUDGET_FIGURES: tuple[str, ...] = (*TOKEN_FIGURES, "cost")
PROBLEMS: tuple[str, ...] = ("config",)
# A budget's name as the budgets file allows it (``plan/budgets.py``).
NAME_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@:+-]{0,63}", re.ASCII)
CURRENCY_SHAPE = re.compile(r"[A-Za-z]{0,8}", re.ASCII)
_ORDER = {"hard": 0, "soft": 1, "ok": 2}


@dataclass(frozen=True)
class StatusBudget:
    """One budget as a remote host sent it (validated)."""

    name: str
    kind: str  # one of plan.budgets.KINDS (our constant)
    value: str | None  # None: not of a label's shape (the name says which)
    figure: str  # one of BUDGET_FIGURES (our constant)
    limit: float
    used: float
    fraction: float
    soft: float
    hard: float
    level: str  # one of LEVELS (our constant)
    start_ts: int
    end_ts: int
    projected: float | None
    enforce: bool


@dataclass(frozen=True)
class StatusBudgets:
    rows: tuple[StatusBudget, ...]
    truncated: int
    truncated_over: int  # of those left out, the ones at soft or hard
    problem: str | None  # "config": the host's budgets file cannot be used
    currency: str  # the price file's currency label, for cost budgets ("" if none)
    tz_offset_seconds: int | None = None  # the budgets' zone, east of UTC, at the document

    @property
    def over(self) -> tuple[StatusBudget, ...]:
        """The rows at soft or hard."""
        return tuple(r for r in self.rows if r.level != "ok")


# ---- producing -------------------------------------------------------------------------


def _amount(x: float, figure: str) -> int | float:
    return round(x) if figure != "cost" else round(x, 4)


def _row(s: BudgetState) -> dict[str, Any]:
    b = s.budget
    value = b.value if VALUE_SHAPE.fullmatch(b.value) else None
    return {
        "name": b.name,
        "kind": b.kind,
        "value": value,
        "figure": b.figure,
        "limit": _amount(b.limit, b.figure),
        "used": _amount(s.used, b.figure),
        "fraction": round(s.fraction, 6),
        "soft": b.soft,
        "hard": b.hard,
        "level": s.level,
        "start": int(s.period_start_ts),
        "end": int(s.period_end_ts),
        "projected": None if s.projected is None else _amount(s.projected, b.figure),
        "enforce": bool(b.enforce),
    }


def budgets_dict(
    states: Sequence[BudgetState],
    *,
    currency: str = "",
    problem: str | None = None,
    tz_offset_s: int | None = None,
) -> dict[str, Any]:
    """``budgets`` of the budgets' states: the most urgent ``MAX_STATUS_BUDGETS``.
    ``tz_offset_s``: the budgets' zone (their days and months), east of UTC, now."""
    ordered = sorted(states, key=lambda s: (_ORDER[s.level], -s.fraction, s.budget.name))
    kept = [s for s in ordered if NAME_SHAPE.fullmatch(s.budget.name)][:MAX_STATUS_BUDGETS]
    over = sum(s.level != "ok" for s in ordered) - sum(s.level != "ok" for s in kept)
    return {
        "rows": [_row(s) for s in kept],
        "truncated": len(ordered) - len(kept),
        "truncated_over": over,
        "problem": problem if problem in PROBLEMS else None,
        "currency": currency if CURRENCY_SHAPE.fullmatch(currency) else "",
        **({"tz_offset": int(tz_offset_s)} if tz_offset_s is not None else {}),
    }


def drop_last(block: dict[str, Any]) -> bool:
    """Drop the least urgent row, counted; False when there is none left."""
    if not block["rows"]:
        return False
    row = block["rows"].pop()
    block["truncated"] += 1
    block["truncated_over"] += row["level"] != "ok"
    return True


# ---- parsing (remote bytes) -----------------------------------------------------------

_WHERE = "budgets"


def _num(parent: Mapping[str, Any], key: str, lo: float, hi: float) -> float:
    v = parent.get(key)
    if not is_number(v):
        raise StatusParseError(f"{_WHERE}: {key} not a number")
    if not lo <= v <= hi:
        raise StatusParseError(f"{_WHERE}: {key} not a number in range")
    return float(v)


def _int(parent: Mapping[str, Any], key: str, lo: int, hi: int) -> int:
    v = parent.get(key)
    if not whole_in(v, lo, hi):
        raise StatusParseError(f"{_WHERE}: {key} not an integer in range")
    return v


def _ours(value: object, allowed: tuple[str, ...], key: str) -> str:
    """One of our own constants (never the remote's string)."""
    for a in allowed:
        if value == a:
            return a
    raise StatusParseError(f"{_WHERE}: {key} not a known word")


def _level_of(fraction: float, soft: float, hard: float) -> str:
    return "hard" if fraction >= hard else "soft" if fraction >= soft else "ok"


def _parse_row(item: object) -> StatusBudget:
    if not isinstance(item, dict):
        raise StatusParseError(f"{_WHERE}: a row is not an object")
    name = item.get("name")
    if not isinstance(name, str) or not NAME_SHAPE.fullmatch(name):
        raise StatusParseError(f"{_WHERE}: a name that is not a budget's name")
    value = item.get("value")
    if value is not None and (not isinstance(value, str) or not VALUE_SHAPE.fullmatch(value)):
        raise StatusParseError(f"{_WHERE}: a value that is not a label's shape")
    figure = _ours(item.get("figure"), BUDGET_FIGURES, "figure")
    limit = _num(item, "limit", 0.0, MAX_LIMIT)
    used = _num(item, "used", 0.0, MAX_USED)
    fraction = _num(item, "fraction", 0.0, MAX_FRACTION)
    # used is rounded (a cost to 4 decimals), the fraction to 6: each may be off by that
    if limit <= 0 or abs(fraction - used / limit) > 1e-5 * max(1.0, fraction) + 1e-4 / limit:
        raise StatusParseError(f"{_WHERE}: fraction is not used over limit")
    soft = _num(item, "soft", 0.0, MAX_THRESHOLD)
    hard = _num(item, "hard", 0.0, MAX_THRESHOLD)
    if not 0 < soft <= hard:
        raise StatusParseError(f"{_WHERE}: soft above hard")
    level = _ours(item.get("level"), LEVELS, "level")
    # the level is the host's, at its full precision; the rounded fraction may sit a hair
    # either side of a threshold, so only a level far from its fraction is refused
    lo, hi = _level_of(fraction + 1e-5, soft, hard), _level_of(fraction - 1e-5, soft, hard)
    if level not in (lo, hi):
        raise StatusParseError(f"{_WHERE}: level does not follow from the fraction")
    start = _int(item, "start", MIN_TS, MAX_TS)
    end = _int(item, "end", MIN_TS, MAX_TS)
    if not start < end <= start + 32 * 86400:
        raise StatusParseError(f"{_WHERE}: a period that is not a day or a month")
    projected = None
    if item.get("projected") is not None:
        projected = _num(item, "projected", 0.0, MAX_USED * 10**4)
    enforce = item.get("enforce")
    if type(enforce) is not bool:
        raise StatusParseError(f"{_WHERE}: enforce not a boolean")
    return StatusBudget(
        name=name,
        kind=_ours(item.get("kind"), KINDS, "kind"),
        value=value,
        figure=figure,
        limit=limit,
        used=used,
        fraction=fraction,
        soft=soft,
        hard=hard,
        level=level,
        start_ts=start,
        end_ts=end,
        projected=projected,
        enforce=enforce,
    )


def parse_budgets(doc: Mapping[str, Any]) -> StatusBudgets | None:
    """The document's ``budgets``, checked; None when it has none."""
    if "budgets" not in doc:
        return None
    got = doc["budgets"]
    if not isinstance(got, dict):
        raise StatusParseError(f"{_WHERE}: not an object")
    rows_in = got.get("rows")
    if not isinstance(rows_in, list) or len(rows_in) > MAX_STATUS_BUDGETS:
        raise StatusParseError(f"{_WHERE}: rows not a short list")
    rows = tuple(_parse_row(item) for item in rows_in)
    if len({r.name for r in rows}) != len(rows):
        raise StatusParseError(f"{_WHERE}: a budget given twice")
    problem = got.get("problem")
    currency = got.get("currency", "")
    if not isinstance(currency, str) or not CURRENCY_SHAPE.fullmatch(currency):
        raise StatusParseError(f"{_WHERE}: currency not a currency's name")
    truncated = _int(got, "truncated", 0, MAX_LIMIT)
    offset = None
    if "tz_offset" in got:
        offset = _int(got, "tz_offset", -MAX_TZ_OFFSET_S, MAX_TZ_OFFSET_S)
    return StatusBudgets(
        rows=rows,
        truncated=truncated,
        truncated_over=_int(got, "truncated_over", 0, truncated),
        problem=None if problem is None else _ours(problem, PROBLEMS, "problem"),
        currency=currency,
        tz_offset_seconds=offset,
    )


def parsed_budgets_dict(b: StatusBudgets) -> dict[str, Any]:
    """A parsed ``budgets`` back in the document's form."""
    return {
        "rows": [
            {
                "name": r.name,
                "kind": r.kind,
                "value": r.value,
                "figure": r.figure,
                "limit": r.limit,
                "used": r.used,
                "fraction": r.fraction,
                "soft": r.soft,
                "hard": r.hard,
                "level": r.level,
                "start": r.start_ts,
                "end": r.end_ts,
                "projected": r.projected,
                "enforce": r.enforce,
            }
            for r in b.rows
        ],
        "truncated": b.truncated,
        "truncated_over": b.truncated_over,
        "problem": b.problem,
        "currency": b.currency,
        **({"tz_offset": b.tz_offset_seconds} if b.tz_offset_seconds is not None else {}),
    }


__all__ = [
    "LEVELS",
    "MAX_BUDGETS_BYTES",
    "MAX_STATUS_BUDGETS",
    "StatusBudget",
    "StatusBudgets",
    "budgets_dict",
    "drop_last",
    "parse_budgets",
    "parsed_budgets_dict",
]
