"""Budgets: the config checked once with one-line errors; where each budget stands in its
period (the zone's days and months), its projection, and who is over an enforced one."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from vllm_ledger.errors import ConfigError
from vllm_ledger.plan.budgets import Budget, evaluate, load_budgets, over_entries, period_window
from vllm_ledger.read.attribution import Credited, FileCredits
from vllm_ledger.read.windows import Window

SH = ZoneInfo("Asia/Shanghai")


def _file(tmp_path: Path, text: str, name: str = "budgets.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


GOOD = """
enforce = true
prices = "{prices}"

[[budget]]
key = "team-a"
period = "day"
tokens = 1000

[[budget]]
name = "bob-month"
user = "bob"
period = "month"
tokens = 500
figure = "output"
soft = 0.5
enforce = false

[[budget]]
adapter = "tiny-b"
cost = 2.0
"""


def _config(tmp_path: Path):
    prices = _file(
        tmp_path, "cloud_input_price = 1000.0\ncloud_output_price = 4000.0\n", "prices.toml"
    )
    return load_budgets(_file(tmp_path, GOOD.format(prices=prices)))


def test_a_good_file_reads_with_its_defaults(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    a, bob, cost = cfg.budgets
    assert (a.name, a.kind, a.value, a.period, a.figure, a.limit) == (
        "key-team-a-day",
        "key",
        "team-a",
        "day",
        "total",
        1000.0,
    )
    assert (a.soft, a.hard, a.enforce) == (0.8, 1.0, True)
    assert (bob.name, bob.figure, bob.soft, bob.enforce) == ("bob-month", "output", 0.5, False)
    assert (cost.figure, cost.limit) == ("cost", 2.0)
    assert cfg.rates is not None and (cfg.rates.input, cfg.rates.cached) == (1000.0, 1000.0)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[[budget]]\nkey = 'a'\nuser = 'b'\ntokens = 1\n", "exactly one of key, adapter"),
        ("[[budget]]\nkey = 'a'\n", "give a limit as tokens = N or cost = N"),
        ("[[budget]]\nkey = 'a'\ntokens = -5\n", "tokens must be a number above 0"),
        ("[[budget]]\nkey = 'a'\ntokens = 5\nperiod = 'week'\n", "period must be day or month"),
        (
            "[[budget]]\nkey = 'a'\ntokens = 5\nsoft = 1.5\n",
            "soft must be above 0 and at most hard",
        ),
        ("[[budget]]\nkey = 'a'\ntokens = 5\nlimit = 3\n", "unknown setting 'limit'"),
        ("[[budget]]\nkey = 'a'\ncost = 5\n", 'needs prices = "PATH"'),
        ("zone = 'Mars/Base'\n[[budget]]\nkey = 'a'\ntokens = 5\n", "not a known time zone"),
        ("budget = []\n", "give 1 to 1000 [[budget]] entries"),
        ("[[budget]]\nkey='a'\ntokens=1\n[[budget]]\nkey='a'\ntokens=2\n", "two budgets are named"),
        ("[[budget]]\nkey = 'a'\ntokens = true\n", "tokens must be a number"),
    ],
)
def test_a_bad_file_is_one_line(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(says)) as info:
        load_budgets(_file(tmp_path, text))
    assert "\n" not in str(info.value)


def _credits(w: Window, kind: str) -> FileCredits:
    return FileCredits(
        by_label={
            ("team-a", "tiny", "alice", "", ""): Credited(700, 200, 100, 3),
            ("team-a", "tiny", "alice", "", "copies"): Credited(999, 0, 0, 0),  # not credited
            ("key:1", "tiny-b", "bob", "", ""): Credited(1000, 300, 0, 1),
        }
    )


def test_where_each_budget_stands_and_who_is_over(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    at = int(datetime(2026, 12, 2, 18, 0, tzinfo=SH).timestamp())  # 3/4 of the day gone
    a, bob, cost = evaluate(cfg, _credits, at, SH)
    assert (a.used, a.fraction, a.level) == (900.0, 0.9, "soft")
    assert a.projected == pytest.approx(1200.0)
    assert a.period_end_ts == int(datetime(2026, 12, 3, tzinfo=SH).timestamp())
    assert (bob.used, bob.level) == (300.0, "soft")  # 300 of 500 output: past 0.5
    assert bob.period_start_ts == int(datetime(2026, 12, 1, tzinfo=SH).timestamp())
    assert cost.used == pytest.approx((1000 * 1000.0 + 300 * 4000.0) / 1e6)  # 2.2 of 2.0
    assert cost.level == "hard"
    assert over_entries([a, bob, cost]) == [
        ("adapter", "tiny-b", int(datetime(2026, 12, 3, tzinfo=SH).timestamp()), cost.budget.name)
    ]


def test_periods_follow_the_zones_calendar() -> None:
    ny = ZoneInfo("America/New_York")
    cfg_day = Budget("b", "key", "k", "day", "total", 1.0)
    at = int(datetime(2026, 11, 1, 12, tzinfo=ny).timestamp())  # the 25-hour day
    w, end = period_window(cfg_day, at, ny)
    assert end - w.start_ts == 25 * 3600
