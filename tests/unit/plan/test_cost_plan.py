"""`vllm-ledger cost --tokens-per-day`: a planned load costed with no ledger at all.

The worked example (docs/cost-and-capacity.md#worked-example) through the CLI: 475 W at 1 per
kWh, a 20,000 machine over 3 years, 0.1 an hour of operations, 2.1 M tokens an hour (50.4 M a
day), a cloud at 1.5 per million: 0.64 per million and a break-even of 16.2 M tokens/day (the
worked example's "about 17" rounds its inputs first: docs/cost-and-capacity.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.inproc import run_cli
from vllm_ledger.plan.cost import PlannedLoad

EXAMPLE = (
    "cost", "--tokens-per-day", "50.4M", "--power-watts", "475", "--electricity-price", "1",
    "--hardware-price", "20000", "--lifetime-years", "3", "--ops-per-hour", "0.1",
    "--cloud-input-price", "1.5", "--cloud-output-price", "1.5",
)  # fmt: skip

EXAMPLE_TEXT = """\
planned load: 50,400,000 tokens/day: input 0, output 50,400,000, cached 0; amounts in CNY
power: 475.0 W (given); busy 24.00 h a day (--busy-share 1)
per hour: electricity 0.4750 + depreciation 0.7610 + operations 0.1000 = 1.3360

basis         cost per day    per M output     per M total
allocation           32.06            0.64            0.64
usage                11.40            0.23            0.23
  allocation: every hour of the day, idle included; usage: electricity of busy seconds

cloud: this load would cost 75.60 a day: 1.50 per M output (1.50 per M total) at this input/output/cached mix
break-even: daily fixed cost 20.66 / (cloud 1.50 - local marginal 0.23) per M output
  = 16.22 M output tokens/day (16.22 M total tokens/day); the plan is 50.40 M output tokens/day
"""  # noqa: E501


def test_worked_example_through_the_cli_byte_for_byte(tmp_path: Path) -> None:
    # No ledger anywhere: an empty home and no VLLM_LEDGER_DIR.
    env = {"HOME": str(tmp_path), "VLLM_LEDGER_DIR": str(tmp_path / "none")}
    code, out, err = run_cli(*EXAMPLE, env=env)
    assert (code, err) == (0, "")
    assert out == EXAMPLE_TEXT
    # docs/cost-and-capacity.md shows the same command and output.
    docs = (REPO / "docs" / "cost-and-capacity.md").read_text()
    assert "$ vllm-ledger " + " ".join(EXAMPLE) + "\n" + EXAMPLE_TEXT in docs


def test_worked_example_figures_equal_the_ten_line_computation() -> None:
    code, out, err = run_cli(*EXAMPLE, "--json")
    assert code == 0, err
    doc = json.loads(out)
    # The ten-line computation, for one week; per million does not depend on the period.
    hours = 24 * 7
    elec = 475 / 1000 * 1.0
    dep = 20000 / (3 * 8760)
    ops = 0.1
    tokens = 2.1e6 * hours
    cost = hours * (elec + dep + ops) / (tokens / 1e6)
    assert f"{cost:.2f}" == "0.64"
    assert doc["allocation"]["per_million_output"] == round(cost, 6)
    assert doc["allocation"]["per_million_total"] == round(cost, 6)
    # Break-even: daily fixed cost / (cloud - local marginal), marginal = electricity per
    # million tokens with the machine busy all day.
    daily_fixed = (dep + ops) * 24
    marginal = elec / 2.1  # per hour / M tokens an hour
    be = daily_fixed / (1.5 - marginal) * 1e6
    assert doc["usage"]["per_million_output"] == round(marginal, 6)
    assert doc["break_even"]["daily_fixed_cost"] == round(daily_fixed, 6)
    assert doc["break_even"]["output_tokens_per_day"] == round(be, 1)
    assert f"{be / 1e6:.1f}" == "16.2"
    # The example's own rounding of the same formula: 21 / (1.5 - 0.23) = 16.5, "about 17".
    assert round(21 / (1.5 - 0.23)) == 17
    assert doc["plan"] == {
        "tokens_per_day": 50_400_000,
        "input_share": 0.0,
        "cached_share": 0.0,
        "busy_share": 1.0,
    }


def test_a_mix_of_input_output_and_cached_tokens() -> None:
    # 10 M tokens a day, 75 % input of which 40 % cached; busy half the day; 2 / 0.5 / 8.
    code, out, err = run_cli(
        "cost", "--tokens-per-day", "10000000", "--input-share", "0.75", "--cached-share", "0.4",
        "--busy-share", "0.5", "--power-watts", "300", "--electricity-price", "1",
        "--hardware-price", "6000", "--lifetime-years", "3", "--ops-per-hour", "0.1",
        "--cloud-input-price", "2", "--cloud-output-price", "8", "--cloud-cached-price", "0.5",
        "--json",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["tokens"] == {"input": 7_500_000, "output": 2_500_000, "cached": 3_000_000,
                             "total": 10_000_000}  # fmt: skip
    assert doc["busy_seconds"] == 43200
    cloud = (4_500_000 * 2 + 3_000_000 * 0.5 + 2_500_000 * 8) / 1e6  # 30.5 a day
    assert doc["break_even"]["cloud_cost"] == cloud
    assert doc["break_even"]["cloud_per_million_output"] == round(cloud / 2.5, 6)
    per_hour = 0.3 + 6000 / (3 * 8760) + 0.1
    assert doc["allocation"]["cost"] == round(24 * per_hour, 6)
    assert doc["allocation"]["per_million_output"] == round(24 * per_hour / 2.5, 6)
    marginal = 12 * 0.3 / 2.5  # busy hours x electricity / M output
    assert doc["usage"]["per_million_output"] == round(marginal, 6)
    fixed = (6000 / (3 * 8760) + 0.1) * 24
    be = fixed / (cloud / 2.5 - marginal) * 1e6
    assert doc["break_even"]["output_tokens_per_day"] == round(be, 1)
    assert doc["break_even"]["total_tokens_per_day"] == round(be * 4, 1)


def test_planned_load_splits_the_day() -> None:
    p = PlannedLoad(1_000_001, input_share=0.5, cached_share=0.5, busy_share=0.25)
    assert (p.input_tokens, p.output_tokens, p.cached_tokens) == (500_000, 500_001, 250_000)
    u = p.usage(100)
    assert (u.wall_seconds, u.busy_seconds, u.total_tokens) == (86400, 21600, 1_000_001)


PRICES = ("--power-watts", "475", "--electricity-price", "1", "--hardware-price", "20000",
          "--lifetime-years", "3", "--ops-per-hour", "0.1")  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--tokens-per-day", "1M", "--root", "."),
            "costs a planned day, not a ledger: drop --root",
        ),
        (("--tokens-per-day", "1M", "--window", "3d"), "drop --window"),
        (("--tokens-per-day", "1M", "--at", "1795944888"), "drop --at"),
        (("--input-share", "0.5"), "--input-share describes a planned load: add --tokens-per-day"),
        (("--tokens-per-day", "1M", "--input-share", "1"), "leaves no output tokens"),
        (("--tokens-per-day", "1M", "--input-share", "75"), "looks like a percentage"),
        (("--tokens-per-day", "1.5"), "is not a whole number of tokens"),
        (("--tokens-per-day", "0"), "is out of range"),
        (("--tokens-per-day", "lots"), "is not a number"),
        (("--tokens-per-day", "1M", "--busy-share", "0"), "is out of range"),
    ],
)
def test_plan_errors(args: tuple[str, ...], message: str) -> None:
    code, out, err = run_cli("cost", *args, *PRICES)
    assert (code, out) == (2, "")
    assert message in err and err.count("\n") == 1, err


def test_plan_needs_a_wattage() -> None:
    code, out, err = run_cli(
        "cost", "--tokens-per-day", "1M", "--prometheus", "http://127.0.0.1:9090", *PRICES[2:]
    )
    assert (code, out) == (2, "")
    assert "--tokens-per-day needs the machine's power under load: add --power-watts W" in err
