"""The status document's budgets (``budgets``): where each of the host's budgets stands, as the
enforcer judges it, bounded in bytes, strict to parse, and no label of the wrong shape kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.credited_ledgers import Call, write_credited_ledger
from tests.inproc import run_cli
from tests.unit.formats.test_status import GOOD, _worst_ports, _worst_report
from vllm_ledger.enforcer import judge
from vllm_ledger.formats.status import MAX_STATUS_BYTES, StatusParseError, doc_dict, parse
from vllm_ledger.formats.status_budgets import (
    MAX_BUDGETS_BYTES,
    MAX_STATUS_BUDGETS,
    budgets_dict,
)
from vllm_ledger.formats.status_render import render
from vllm_ledger.plan.budgets import Budget, BudgetState, load_budgets

T0 = 1_796_000_000  # 2026-11-30 00:53:20 UTC
AT = T0 + 3600
DAY = 1_795_996_800  # 2026-11-30 00:00 UTC
BUDGETS = """
zone = "UTC"
enforce = true

[[budget]]
key = "team-a"
tokens = 2_000_000
name = "team-a-day"

[[budget]]
adapter = "tiny"
tokens = 1000
figure = "input"
period = "month"
enforce = false

[[budget]]
user = "has space"
tokens = 500
name = "spacey"

[[budget]]
key = "team-b"
tokens = 1_000_000
"""


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A root whose ledger credited three keys, and a budgets file over them."""
    base = tmp_path_factory.mktemp("budgets")
    root = base / "usage"
    calls = [
        Call(T0 + 10, "team-a", "tiny", prompt=1_600_000, gen=100_000, cached=64),
        Call(T0 + 20, "team-b", "tiny", "has space", prompt=400, gen=200),
        Call(T0 + 30, "key:1a2b3c4d", "other-lora", prompt=40, gen=9),
    ]
    write_credited_ledger(root, "run-b", start_ts=T0, end_ts=T0 + 1800, calls=calls, port=19001)
    (base / "budgets.toml").write_text(BUDGETS)
    return root, base / "budgets.toml"


def _status(root: Path, *args: str, env: dict[str, str] | None = None) -> tuple[Any, str]:
    code, out, err = run_cli(
        "status", "--root", str(root), "--at", str(AT), "--no-health", "--tz", "UTC", *args,
        env=env,
    )  # fmt: skip
    assert code == 0, err
    return json.loads(out), err


def test_the_budgets_are_judged_as_the_enforcer_judges_them(host: tuple[Path, Path]) -> None:
    root, budgets = host
    doc, err = _status(root, "--budgets", str(budgets))
    assert err == ""
    got = doc["budgets"]
    assert [r["name"] for r in got["rows"]] == [
        "adapter-tiny-month",  # hard: 1,600,400 input of 1,000 (1,600.4)
        "spacey",  # hard: 600 of 500 (1.2)
        "team-a-day",  # soft: 1,700,000 of 2,000,000 (0.85)
        "key-team-b-day",  # ok: 600 of 1,000,000
    ]
    rows = {r["name"]: r for r in got["rows"]}
    assert rows["team-a-day"] == {
        "name": "team-a-day", "kind": "key", "value": "team-a", "figure": "total",
        "limit": 2_000_000, "used": 1_700_000, "fraction": 0.85, "soft": 0.8, "hard": 1.0,
        "level": "soft", "start": DAY, "end": DAY + 86400,
        "projected": round(1_700_000 * 86400 / (AT - DAY)), "enforce": True,
    }  # fmt: skip
    assert rows["spacey"]["value"] is None  # a user with a space: its name says which
    assert rows["spacey"]["level"] == "hard" and rows["spacey"]["used"] == 600
    assert rows["adapter-tiny-month"]["enforce"] is False
    assert (got["truncated"], got["truncated_over"], got["problem"]) == (0, 0, None)
    assert got["tz_offset"] == 0  # the budgets' zone: UTC
    # The same states the enforcer publishes from, at the same instant.
    states = judge(root, load_budgets(budgets), lambda: float(AT))
    for s in states:
        row = rows[s.budget.name]
        assert (row["used"], row["level"], row["start"], row["end"]) == (
            round(s.used), s.level, s.period_start_ts, s.period_end_ts,
        )  # fmt: skip
    # The environment names the file where the command line does not (a forced command).
    assert _status(root, env={"VLLM_LEDGER_BUDGETS": str(budgets)})[0]["budgets"] == got
    assert "budgets" not in _status(root)[0]


def test_the_hard_ones_go_first_by_fraction() -> None:
    rows = budgets_dict(
        [_state(f"b{i}", fraction) for i, fraction in enumerate([0.1, 1.5, 0.9, 3.0, 0.85])]
    )["rows"]
    assert [(r["name"], r["level"]) for r in rows] == [
        ("b3", "hard"), ("b1", "hard"), ("b2", "soft"), ("b4", "soft"), ("b0", "ok"),
    ]  # fmt: skip


def test_a_budgets_file_that_cannot_be_used_leaves_the_figures(
    host: tuple[Path, Path], tmp_path: Path
) -> None:
    root, _budgets = host
    bad = tmp_path / "budgets.toml"
    bad.write_text("[[budget]]\nkey = 'x'\n")
    doc, err = _status(root, "--budgets", str(bad))
    assert doc["budgets"] == {
        "rows": [], "truncated": 0, "truncated_over": 0, "problem": "config", "currency": "",
    }  # fmt: skip
    assert err == (
        f"vllm-ledger: warning: budgets: {bad}: budget 1: give a limit as tokens = N or "
        "cost = N (one of them)\n"
    )
    assert doc["windows"]["today"]["input"] == 1_600_440
    doc, err = _status(root, "--budgets", str(tmp_path / "absent.toml"))
    assert doc["budgets"]["problem"] == "config" and "absent.toml" in err


def _state(name: str, fraction: float, value: str = "team-a", **budget: Any) -> BudgetState:
    b = Budget(name, "key", value, "day", "total", 1000.0, **budget)
    level = "hard" if fraction >= b.hard else "soft" if fraction >= b.soft else "ok"
    return BudgetState(b, DAY, DAY + 86400, AT, 1000.0 * fraction, fraction, level, 12.0)  # type: ignore[arg-type]


def _worst_states(n: int) -> list[BudgetState]:
    out = []
    for i in range(n):
        b = Budget(
            f"{i:02d}" + "n" * 62, "tenant", f"{i:02d}" + "v" * 62, "month", "cost", 1e12,
            soft=9.5, hard=10.0, enforce=True,
        )  # fmt: skip
        out.append(BudgetState(b, DAY, DAY + 31 * 86400, AT, 9.9e17, 990_000.123456, "hard",
                               9.99e21))  # fmt: skip
    return out


def test_the_worst_case_budgets_fit_their_bound_and_go_before_ports() -> None:
    block = budgets_dict(_worst_states(40), currency="ABCDEFGH", tz_offset_s=-18 * 3600)
    assert len(block["rows"]) == MAX_STATUS_BUDGETS
    assert (block["truncated"], block["truncated_over"]) == (24, 24)
    assert len(json.dumps(block, separators=(",", ":"))) + len(',"budgets":') < MAX_BUDGETS_BYTES
    text = render(_worst_report(), budgets=block)
    assert parse(text.encode()).budgets is not None
    # 16 port rows at their largest leave no room: the budgets go, counted, every port stays.
    text = render(_worst_report(), _worst_ports(16), budgets=budgets_dict(_worst_states(40)))
    assert len(text) + 1 <= MAX_STATUS_BYTES
    doc = parse(text.encode())
    assert doc.instances is not None and len(doc.instances) == 16
    assert doc.budgets is not None
    assert len(doc.budgets.rows) + doc.budgets.truncated == 40
    assert doc.budgets.truncated_over == doc.budgets.truncated
    # with counts a fleet may really reach, 16 budgets named as people name them (each 1.2 of
    # its limit) fit beside the 16 port rows
    states = [_state(f"team-{i:02d}-day", 1.2, f"team-{i:02d}") for i in range(16)]
    text = render(_worst_report(), _worst_ports(16, big=10**12), budgets=budgets_dict(states))
    assert len(json.loads(text)["budgets"]["rows"]) == 16


ROW = {
    "name": "team-a-day", "kind": "key", "value": "team-a", "figure": "total",
    "limit": 2_000_000, "used": 1_700_000, "fraction": 0.85, "soft": 0.8, "hard": 1.0,
    "level": "soft", "start": DAY, "end": DAY + 86400, "projected": 8_000_000, "enforce": True,
}  # fmt: skip
BLOCK = {"rows": [ROW], "truncated": 3, "truncated_over": 1, "problem": None, "currency": "",
         "tz_offset": 28800}  # fmt: skip


def test_a_document_with_budgets_round_trips_through_the_parser() -> None:
    doc = parse(json.dumps({**GOOD, "budgets": BLOCK}).encode())
    assert doc.budgets is not None and doc.budgets.over[0].value == "team-a"
    assert doc_dict(doc)["budgets"] == BLOCK
    cost = {**ROW, "figure": "cost", "limit": 12.5, "used": 0.0008, "fraction": 0.000064,
            "level": "ok", "projected": None, "value": None}  # fmt: skip
    got = parse(
        json.dumps({**GOOD, "budgets": {**BLOCK, "rows": [cost], "currency": "CNY"}}).encode()
    )
    assert got.budgets is not None and got.budgets.rows[0].value is None
    assert got.budgets.currency == "CNY"
    assert parse(json.dumps(GOOD).encode()).budgets is None  # no budgets file: no block


HOSTILE_ROWS: list[dict[str, Any]] = [
    {"name": "\x1b]0;evil\x07"},
    {"name": "a b"},
    {"name": "x" * 65},
    {"name": 7},
    {"value": "\x1b[2J"},
    {"value": "\u202eevil"},
    {"value": "http://evil.example/x"},
    {"value": "<!channel>"},
    {"value": "a\nb"},
    {"value": "x" * 65},
    {"kind": "group"},
    {"figure": "cost\n"},
    {"level": "HARD"},
    {"level": "hard"},  # 0.85 is not past hard 1.0
    {"level": "ok"},
    {"fraction": 0.5},  # not used over limit
    {"used": -1},
    {"used": 1e19},
    {"limit": 0},
    {"limit": 10**16},
    {"used": True},
    {"fraction": float("nan")},
    {"soft": 2.0},  # above hard
    {"hard": 11.0},
    {"start": DAY + 86400},
    {"end": DAY + 40 * 86400},
    {"start": 5},
    {"projected": -3},
    {"enforce": "yes"},
    {"projected": "1e3"},
]


@pytest.mark.parametrize("change", HOSTILE_ROWS, ids=[str(i) for i in range(len(HOSTILE_ROWS))])
def test_a_hostile_budget_row_rejects_the_document(change: dict[str, Any]) -> None:
    data = json.dumps({**GOOD, "budgets": {**BLOCK, "rows": [{**ROW, **change}]}}).encode()
    with pytest.raises(StatusParseError):
        parse(data)


@pytest.mark.parametrize(
    "block",
    [
        [],
        {**BLOCK, "rows": [ROW] * 2},  # a budget twice
        {**BLOCK, "rows": [{**ROW, "name": f"b{i}"} for i in range(17)]},
        {**BLOCK, "truncated": -1},
        {**BLOCK, "truncated_over": 4},  # more over than left out
        {**BLOCK, "problem": "oops"},
        {**BLOCK, "currency": "\x1b[31m"},
        {**BLOCK, "tz_offset": 18 * 3600 + 1},
        {**BLOCK, "tz_offset": "+08:00"},
        {**BLOCK, "rows": "x"},
    ],
)
def test_a_hostile_budgets_block_rejects_the_document(block: object) -> None:
    with pytest.raises(StatusParseError):
        parse(json.dumps({**GOOD, "budgets": block}).encode())
