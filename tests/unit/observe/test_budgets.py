"""Budgets on /metrics: each budget judged as the enforcer judges it (used, limit, fraction,
thresholds, projection, period end, enforced), reset when its period turns in the budgets'
zone; and whether hard budgets hold, from the enforcer's file (fresh, stale, missing, unusable).
Real ledgers (the real Recorder and tag book on a fake clock), the real collector, and the
real command refusing a bad budgets file."""

from __future__ import annotations

from pathlib import Path

from tests.credited_ledgers import Call, write_credited_ledger
from tests.inproc import run_cli
from tests.ledgers import FakeClock
from tests.unit.observe.test_whose import _scrape
from vllm_ledger.enforcer import judge
from vllm_ledger.format import overbudget
from vllm_ledger.observe.budgets import BudgetWatch
from vllm_ledger.observe.exporter import LedgerCollector
from vllm_ledger.plan.budgets import load_budgets

T0 = 1_800_000_000  # 2027-01-15 08:00 UTC, 16:00 in Shanghai
NEXT_DAY = T0 + 8 * 3600  # 2027-01-16 00:00 in Shanghai
DAY_START = T0 - 16 * 3600
MONTH_START = 1_798_732_800  # 2027-01-01 00:00 in Shanghai
MONTH_END = 1_801_411_200  # 2027-02-01 00:00 in Shanghai
CALLS = [
    Call(T0 + 10, "team-a", "tiny", "alice", prompt=700, gen=100, cached=200),
    Call(T0 + 20, "team-a", "lora-x", "bob", prompt=50, gen=5),
    Call(T0 + 30, "team-b", "tiny", "alice", prompt=30, gen=3),
    Call(T0 + 40, "team-a", "tiny", prompt=900, gen=90, aborted=True),  # credited to nobody
]
BUDGETS = """zone = "Asia/Shanghai"
enforce = true
prices = "{prices}"
[[budget]]
key = "team-a"
tokens = 1000
[[budget]]
user = "alice"
period = "month"
figure = "input"
tokens = 2000
soft = 0.3
enforce = false
[[budget]]
adapter = "lora-x"
name = "lora-x-cost"
cost = 0.5
"""
KEYS = ("budget", "by", "period", "figure")


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "ledger"
    write_credited_ledger(root, "run-1", start_ts=T0, end_ts=T0 + 100, calls=CALLS)
    prices = tmp_path / "prices.toml"
    prices.write_text("cloud_input_price = 2000.0\ncloud_output_price = 8000.0\n")
    budgets = tmp_path / "budgets.toml"
    budgets.write_text(BUDGETS.format(prices=prices))
    return root, budgets


def _collector(root: Path, budgets: Path | None, clock: FakeClock) -> LedgerCollector:
    watch = BudgetWatch.of(load_budgets(budgets), "UTC") if budgets is not None else None
    return LedgerCollector([root], tz="UTC", clock=clock, cache_seconds=0, budgets=watch)


def _per_budget(samples: list, name: str) -> dict[tuple[str, ...], float]:
    return {(*(lab[k] for k in KEYS), lab[lab["by"]]): v for n, lab, v in samples if n == name}


def test_each_budget_is_served_as_the_enforcer_judges_it(tmp_path: Path) -> None:
    root, budgets = _setup(tmp_path)
    clock = FakeClock(T0 + 3600.0)
    samples = _scrape(_collector(root, budgets, clock))
    a = ("key-team-a-day", "key", "day", "total", "team-a")
    u = ("user-alice-month", "user", "month", "input", "alice")
    c = ("lora-x-cost", "adapter", "day", "cost", "lora-x")
    # team-a: 700 + 100 + 50 + 5 (the aborted call is credited to nobody); alice's input:
    # 700 + 30; lora-x: 50 input at 2,000 and 5 output at 8,000 per million.
    assert _per_budget(samples, "vllm_ledger_budget_used") == {a: 855, u: 730, c: 0.14}
    assert _per_budget(samples, "vllm_ledger_budget_limit") == {a: 1000, u: 2000, c: 0.5}
    assert _per_budget(samples, "vllm_ledger_budget_fraction") == {
        a: 0.855, u: 0.365, c: 0.14 / 0.5
    }  # fmt: skip
    assert _per_budget(samples, "vllm_ledger_budget_soft_fraction") == {a: 0.8, u: 0.3, c: 0.8}
    assert _per_budget(samples, "vllm_ledger_budget_hard_fraction") == {a: 1.0, u: 1.0, c: 1.0}
    assert _per_budget(samples, "vllm_ledger_budget_enforced") == {a: 1, u: 0, c: 1}
    end = NEXT_DAY
    assert _per_budget(samples, "vllm_ledger_budget_period_end_timestamp_seconds") == {
        a: end, u: MONTH_END, c: end
    }  # fmt: skip
    at = T0 + 3600
    projected = _per_budget(samples, "vllm_ledger_budget_projected")
    assert projected == {
        a: 855 * 86400 / (at - DAY_START),
        u: 730 * (MONTH_END - MONTH_START) / (at - MONTH_START),
        c: 0.14 * 86400 / (at - DAY_START),
    }
    # The same figures the enforcer publishes from.
    states = judge(root, load_budgets(budgets), lambda: float(at))
    assert [s.used for s in states] == [855.0, 730.0, 0.14]


def test_a_day_budget_resets_at_midnight_in_the_budgets_zone(tmp_path: Path) -> None:
    root, budgets = _setup(tmp_path)
    clock = FakeClock(NEXT_DAY - 1.0)
    collector = _collector(root, budgets, clock)
    before = _per_budget(_scrape(collector), "vllm_ledger_budget_fraction")
    clock.t = NEXT_DAY + 1.0
    after = _per_budget(_scrape(collector), "vllm_ledger_budget_fraction")
    a = ("key-team-a-day", "key", "day", "total", "team-a")
    u = ("user-alice-month", "user", "month", "input", "alice")
    assert (before[a], after[a]) == (0.855, 0.0)
    assert before[u] == after[u] == 0.365  # the month goes on


def _enforcer(samples: list) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for n, lab, v in samples:
        if n.startswith("vllm_ledger_enforcer_"):
            key = n.removeprefix("vllm_ledger_enforcer_") + (
                f"[{lab['state']}]" if "state" in lab else ""
            )
            out.setdefault(lab["root"], {})[key] = v
    return out


def test_whether_hard_budgets_hold_is_served_per_root(tmp_path: Path) -> None:
    root, budgets = _setup(tmp_path)
    clock = FakeClock(T0 + 200.0)
    collector = _collector(root, budgets, clock)
    states = {f"file_state[{s}]": 0.0 for s in ("fresh", "stale", "missing", "unusable")}
    assert _enforcer(_scrape(collector)) == {
        str(root): {**states, "file_state[missing]": 1.0, "fails_open": 1.0}
    }
    over = [overbudget.Over("key", "team-a", NEXT_DAY, "key-team-a-day")]
    overbudget.write(root, over, written_ts=T0 + 190.0)
    assert _enforcer(_scrape(collector)) == {
        str(root): {
            **states, "file_state[fresh]": 1.0, "fails_open": 0.0, "file_age_seconds": 10.0,
            "over_budget": 1.0,
        }
    }  # fmt: skip
    clock.t = T0 + 190.0 + 31.0  # six rounds missed, and one more second
    assert _enforcer(_scrape(collector)) == {
        str(root): {
            **states, "file_state[stale]": 1.0, "fails_open": 1.0, "file_age_seconds": 31.0,
            "over_budget": 1.0,
        }
    }  # fmt: skip
    overbudget.path_in(root).write_text("{}")
    got = _enforcer(_scrape(collector))[str(root)]
    assert (got["file_state[unusable]"], got["fails_open"]) == (1.0, 1.0)
    assert "file_age_seconds" not in got


def test_without_budgets_only_a_root_with_a_file_is_served(tmp_path: Path) -> None:
    root, _budgets = _setup(tmp_path)
    clock = FakeClock(T0 + 200.0)
    collector = _collector(root, None, clock)
    samples = _scrape(collector)
    assert _enforcer(samples) == {}
    assert _per_budget(samples, "vllm_ledger_budget_used") == {}
    overbudget.write(root, [], written_ts=T0 + 100.0)
    got = _enforcer(_scrape(collector))[str(root)]
    assert (got["file_state[stale]"], got["fails_open"], got["file_age_seconds"]) == (
        1.0, 1.0, 100.0
    )  # fmt: skip


def test_a_failed_read_serves_no_budget_but_still_the_enforcers_file(tmp_path: Path) -> None:
    root, budgets = _setup(tmp_path)
    collector = LedgerCollector(
        [root],
        tz="Not/AZone",  # every read fails
        clock=FakeClock(T0 + 200.0),
        cache_seconds=0,
        budgets=BudgetWatch.of(load_budgets(budgets), "UTC"),
        say=lambda line: None,
    )
    samples = _scrape(collector)
    assert _per_budget(samples, "vllm_ledger_budget_used") == {}
    assert _enforcer(samples)[str(root)]["fails_open"] == 1.0


def test_the_command_refuses_a_bad_budgets_file_in_one_line(tmp_path: Path) -> None:
    root, _budgets = _setup(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text('{"budget": [{"key": "a", "tokens": 5, "period": "week"}]}')
    code, out, err = run_cli("exporter", "--root", str(root), "--budgets", str(bad))
    assert (code, out) == (2, "")
    assert err == f"vllm-ledger: error: {bad}: budget 1: period must be day or month, not 'week'\n"
