"""``vllm_ledger/timespec.py``: every form of a time as people type it, and its refusals in
one line worded without a flag."""

from __future__ import annotations

from datetime import datetime

import pytest

from vllm_ledger import units
from vllm_ledger.errors import BadArgument
from vllm_ledger.timespec import TIME_FORMS, TimeSpec, time_spec
from vllm_ledger.units import instant


def test_a_far_future_time_is_outside_2000_2100_as_every_form_says_it() -> None:
    for value in ("253402300799", "2100-06-01T00:00:00Z", "2100-01", "21000101", "1999-12-31"):
        with pytest.raises(BadArgument) as e:
            time_spec(value)
        assert str(e.value) == (
            f"{value!r} is outside 2000-2100: give {TIME_FORMS}, e.g. 2026-11-29"
        )


def test_time_spec_forms() -> None:
    assert time_spec("1796000000") == TimeSpec("1796000000", "instant", ts=1796000000)
    iso = "2026-12-01T08:00:00+08:00"
    assert time_spec(iso).ts == instant(iso)
    assert time_spec("2026-12-01") == TimeSpec(
        "2026-12-01", "local", local=datetime(2026, 12, 1), date_only=True
    )
    for text in ("2026-12-01T08:00", "2026-12-01 08:00", "2026-12-01T08:00:00"):
        assert time_spec(text).local == datetime(2026, 12, 1, 8)
        assert time_spec(text).date_only is False
    assert time_spec("today") == TimeSpec("today", "day", days_back=0)
    assert time_spec("yesterday") == TimeSpec("yesterday", "day", days_back=1)
    assert time_spec("7d") == TimeSpec("7d", "ago", seconds=7 * 86400)
    assert time_spec("90m").seconds == 5400
    # ccusage's YYYYMMDD (never Unix seconds: eight digits are before 2000) and a month
    assert time_spec("20261201") == TimeSpec(
        "20261201", "local", local=datetime(2026, 12, 1), date_only=True
    )
    assert time_spec("2026-12") == TimeSpec(
        "2026-12", "local", local=datetime(2026, 12, 1), date_only=True
    )
    # any ISO 8601 time without an offset is a local time; with one (or Z), an instant
    assert time_spec("2026-12-01T08:00:00.5").local == datetime(2026, 12, 1, 8, 0, 0, 500000)
    assert time_spec("2026-12-01T00:00:00Z").ts == 1_796_083_200
    assert time_spec(" 1796000000.5 ").ts == 1_796_000_000.5


def test_time_spec_refusals() -> None:
    forms = TIME_FORMS
    refusals = {
        "2026-13-01": f"'2026-13-01' is not a date: give {forms}, e.g. 2026-11-29",
        "20261301": f"'20261301' is not a date: give {forms}, e.g. 2026-11-29",
        "2026-13": f"'2026-13' is not a date: give {forms}, e.g. 2026-11-29",
        "19991231": f"'19991231' is outside 2000-2100: give {forms}, e.g. 2026-11-29",
        "2026-12-01T25:00": f"'2026-12-01T25:00' is not a time: give {forms}, e.g. 2026-11-29",
        "nan": f"'nan' is not a time: give {forms}, e.g. 2026-11-29",
        "tomorrow-ish": f"'tomorrow-ish' is not a time: give {forms}, e.g. 2026-11-29",
        "0s": f"'0s' is not a duration above 0: give {forms}, e.g. 2026-11-29",
        "1999-12-31": f"'1999-12-31' is outside 2000-2100: give {forms}, e.g. 2026-11-29",
        "1796000000000": "'1796000000000' looks like milliseconds: give seconds, e.g. 1796000000",
    }
    for value, line in refusals.items():
        with pytest.raises(BadArgument) as e:
            time_spec(value)
        assert str(e.value) == line


@pytest.mark.parametrize("text", ["1000000d", "300000d", "36526d", "5300w", "999999999999h"])
def test_a_duration_longer_than_2000_2100_is_refused_when_typed(text: str) -> None:
    """Before any zone or cutoff is known: from every cutoff it reaches back before 2000."""
    with pytest.raises(BadArgument) as e:
        time_spec(text)
    assert (
        str(e.value) == f"{text!r} reaches back before 2000-01-01: give a shorter duration, e.g. 7d"
    )
    century = units.LATEST_AT - units.EARLIEST_AT
    assert time_spec(f"{century:.0f}s") == TimeSpec(f"{century:.0f}s", "ago", seconds=century)
