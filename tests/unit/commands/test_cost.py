"""``vllm-ledger cost`` over a ledger: a machine price it lacks is one line naming the flags;
given them, the cost per hour and per million tokens (the arithmetic is
tests/unit/plan/test_cost.py's); a power read from an answer Prometheus called partial is
INCOMPLETE, in the text and the JSON, the exit status still 0 (cost has no status for it)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from tests.ledgers import ev, write_ledger
from vllm_ledger import cli
from vllm_ledger.commands import cost as cost_command
from vllm_ledger.plan.usage import measure

T0 = 1_700_000_000
POWER = ["--power-watts", "300", "--electricity-price", "0.1"]
MACHINE = ["--hardware-price", "30000", "--lifetime-years", "3", "--ops-per-hour", "0.5"]


@pytest.fixture
def argv(tmp_path: Path) -> list[str]:
    write_ledger(
        tmp_path, "run-a", start_ts=T0, end_ts=T0 + 1800, port=19001, events=[ev(T0 + 5, 10, 2)]
    )
    return ["cost", "--root", str(tmp_path), "--window", "total", "--at", str(T0 + 3600)]


def test_missing_machine_prices_are_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main([*argv, *POWER]) == 2
    assert capsys.readouterr().err == (
        "vllm-ledger: error: missing --hardware-price, --lifetime-years, --ops-per-hour: give "
        "them as flags or in --config FILE\n"
    )


def test_the_cost_of_a_window(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([*argv, *POWER, *MACHINE, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["window"] == {"name": "total", "start": T0, "cutoff": T0 + 3600}
    assert doc["tokens"] == {"input": 10, "output": 2, "cached": 0, "total": 12}
    assert (doc["uncovered_seconds"], doc["lower_bound"]) == (1800, True)
    assert doc["per_hour"] == {"electricity": 0.03, "depreciation": 1.141553, "operations": 0.5}
    assert doc["allocation"] == {
        "cost": 1.671553,
        "per_million_output": 835776.255708,
        "per_million_total": 139296.042618,
    }
    # one busy second (its per-second rows are there): usage is that second's share
    assert (doc["busy_seconds"], doc["busy_resolution_seconds"]) == (1, 1)
    assert doc["usage"] == {
        "cost": 8e-06,
        "per_million_output": 4.166667,
        "per_million_total": 0.694444,
    }


def test_a_power_from_a_partial_answer(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def fetch(url: str) -> bytes:
        result = [{"metric": {}, "value": [T0 + 3600, "300"]}]
        warned = {"warnings": ["remote read from 10.0.0.7 failed"]}
        return json.dumps({"status": "success", "data": {"result": result}, **warned}).encode()

    monkeypatch.setattr(cost_command, "measure", functools.partial(measure, fetch=fetch))
    prices = ["--electricity-price", "0.1", *MACHINE]
    asked = [*argv, "--prometheus", "http://v:8481", *prices]
    assert cli.main(asked) == 0
    out = capsys.readouterr().out
    assert "power: 300.0 W (Prometheus: sum(avg_over_time(DCGM_FI_DEV_POWER_USAGE[3600s])))" in out
    assert "power: INCOMPLETE: read from an answer the store called partial" in out
    assert (
        "  the store's answer to sum(avg_over_time(DCGM_FI_DEV_POWER_USAGE[3600s])) came with a "
        "warning: remote read from 10.0.0.7 failed\n"
    ) in out
    assert cli.main([*asked, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["power_watts"], doc["power_complete"]) == (300.0, False)
    assert doc["partial_answers"]["sum(avg_over_time(DCGM_FI_DEV_POWER_USAGE[3600s]))"] == {
        "is_partial": False,
        "warnings": ["remote read from 10.0.0.7 failed"],
        "warnings_left_out": 0,
    }
    assert cli.main([*argv, *POWER, *MACHINE, "--json"]) == 0  # a given power is complete
    doc = json.loads(capsys.readouterr().out)
    assert (doc["power_complete"], doc["partial_answers"]) == (True, {})
