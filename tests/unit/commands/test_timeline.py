"""``vllm-ledger timeline``'s flags: ``--window``/``--step`` as one unit (``span``), a window
cut into too many steps refused before any ledger is read (``check_steps``), each a one-line
error. The timeline itself is tests/test_timeline.py's."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.inproc import run_cli
from vllm_ledger.commands.timeline import check_steps, span
from vllm_ledger.errors import BadArgument

SH = ZoneInfo("Asia/Shanghai")
AT = int(datetime(2026, 11, 29, 10, 0, 0, tzinfo=SH).timestamp())  # on the hour


def test_a_span_is_passed_on_in_one_unit() -> None:
    window = span("--window", named=("today", "total"))
    assert [window(v) for v in ("1h30m", "90m", " 7d ", "3600", "today")] == [
        "90m",
        "90m",
        "7d",
        "1h",
        "today",
    ]
    with pytest.raises(BadArgument, match=r"^--step 'today' is not a duration"):
        span("--step")("today")  # a name only where the flag takes names


def test_too_many_steps_are_refused_before_reading() -> None:
    check_steps("90m", "1m")  # 90 steps
    check_steps("today", "1s")  # a calendar window: the timeline checks it once it starts
    check_steps("30d", "day")  # a calendar step
    with pytest.raises(BadArgument) as caught:
        check_steps("90m", "1s")
    assert str(caught.value) == (
        "--window 90m at --step 1s makes 5400 steps: use a larger --step (at most 5000 steps)"
    )


def test_bad_flags_are_one_line_errors(tmp_path: Path) -> None:
    code, _, err = run_cli("timeline", "--root", str(tmp_path), "--step", "1y")
    assert (code, err) == (
        2,
        "vllm-ledger: error: --step '1y' is not a duration: give a duration in whole seconds "
        "from 1s to 36600d (30s, 10m, 7d, 1h30m or plain seconds), e.g. --step 1h\n",
    )
    code, _, err = run_cli(
        "timeline", "--root", str(tmp_path), "--window", "30d", "--step", "1m", "--at", str(AT)
    )
    assert code == 2 and "makes 43200 steps: use a larger --step" in err
