"""``vllm_ledger/units.py``: the one vocabulary (durations, instants, numbers, HOST:PORT, plain
paths), its exact outputs in every style, and its refusals worded without a flag; and no module
below the commands words a refusal with a command-line flag (docs/architecture.md, layers)."""

from __future__ import annotations

import ast
import re
from datetime import datetime
from pathlib import Path

import pytest

from vllm_ledger import units
from vllm_ledger.commands._refusals import flagged
from vllm_ledger.errors import BadArgument
from vllm_ledger.units import (
    duration_seconds,
    format_duration,
    host_port,
    instant,
    is_plain_path,
    number,
    port,
    short_text,
    whole_duration,
)

PKG = Path(__file__).resolve().parents[2] / "vllm_ledger"

# ---- durations -------------------------------------------------------------------------------


def test_the_units_form() -> None:
    assert duration_seconds("1w2d3h4m5s") == 604800 + 2 * 86400 + 3 * 3600 + 4 * 60 + 5
    assert duration_seconds("1.5h") == 5400 and duration_seconds("250ms") == 0.25
    bad = ("1m1h", "1h1h", "1y", "5", "1 m", "1e3s", "", "h", "-1h", "9" * 50 + "s")
    assert [duration_seconds(t) for t in bad] == [None] * len(bad)


def test_the_prometheus_form() -> None:
    assert duration_seconds("1h30m", form="prometheus") == 5400
    assert duration_seconds("2y", form="prometheus") == 2 * 365 * 86400
    assert duration_seconds("1500ms", form="prometheus") == 1.5
    for bad in ("1.5h", "90", "1m1h", "5 m", ""):
        assert duration_seconds(bad, form="prometheus") is None, bad


def test_a_whole_duration_names_its_argument() -> None:
    assert [whole_duration(t) for t in ("90m", "1h30m", " 7d ", "2w", "15s")] == [
        5400,
        5400,
        604800,
        1209600,
        15,
    ]
    for bad in ("0h", "h", "1y", "-1h", "", "500ms", "90"):
        with pytest.raises(BadArgument, match="is not a duration") as e:
            whole_duration(bad, argument="step")
        assert (e.value.argument, e.value.value) == ("step", bad)
    with pytest.raises(BadArgument) as e:
        whole_duration("1y", argument="step")
    assert str(e.value) == "step '1y' is not a duration: give a number and a unit, e.g. 1h or 7d"
    assert str(flagged(e.value, "--step")) == (
        "--step '1y' is not a duration: give a number and a unit, e.g. --step 1h or 7d"
    )


@pytest.mark.parametrize(
    ("style", "cases"),
    [
        (
            "compact",
            {0: "0s", 0.5: "500ms", 1.5: "1.5s", 90: "1m30s", 86400: "1d", 90061: "1d1h1m1s"},
        ),
        ("prometheus", {90: "1m30s", 600: "10m", 1.5: "1500ms", 0.25: "250ms"}),
        ("range", {0.2: "1s", 90: "90s", 3600.4: "3600s"}),
        ("unit", {5400: "90m", 86400: "1d", 1209600: "2w", 15: "15s", 3600: "1h"}),
        ("unit-words", {3600: "1 h", 5400: "90 min", 86400: "1 d", 90: "90 s", 604800: "7 d"}),
        (
            "words",
            {
                0: "0 s",
                5: "5 s",
                60: "1 min",
                119: "1 min 59 s",
                125: "2 min 5 s",
                3600: "1 h",
                3900: "1 h 5 min",
                7199: "1 h 59 min",
                7200: "2 h",
                86400: "1 d",
                172799: "1 d 23 h",
                183600: "2 d 3 h",
                200000: "2 d 7 h",
                2592000: "30 d",
            },
        ),
        ("rounded", {59: "59s", 59.6: "1m", 7200: "2h", 3 * 86400: "3d", -3: "0s"}),
    ],
)
def test_each_style_prints_exactly(style: units.DurationStyle, cases: dict[float, str]) -> None:
    assert {x: format_duration(x, style) for x in cases} == cases


def test_the_rounded_style_takes_its_unit_names() -> None:
    assert format_duration(3 * 86400, "rounded", units=("秒", "分", "时", "天")) == "3天"
    assert format_duration(90, "rounded", units="smhd") == "1m"


# ---- instants --------------------------------------------------------------------------------


def test_instants() -> None:
    assert instant("1796000000") == 1796000000.0
    assert instant("2026-11-29T00:00:00Z") == instant("2026-11-29T08:00:00+08:00")
    refusals = {
        "yesterday": "'yesterday' is not a time: give Unix seconds or ISO 8601, "
        "e.g. 2026-11-29T08:00:00+08:00",
        "nan": "'nan' is not a time: give Unix seconds or ISO 8601, e.g. 2026-11-29T08:00:00+08:00",
        "1796000000000": "'1796000000000' looks like milliseconds: give seconds, e.g. 1796000000",
        "1990-01-01T00:00:00Z": "'1990-01-01T00:00:00Z' is outside 2000-2100: give Unix seconds "
        "or ISO 8601, e.g. 2026-11-29T08:00:00+08:00",
        "2026-11-29T08:00:00": "'2026-11-29T08:00:00' has no UTC offset: add one, e.g. +08:00",
    }
    for value, line in refusals.items():
        with pytest.raises(BadArgument) as e:
            instant(value)
        assert str(e.value) == line
    with pytest.raises(BadArgument) as e:
        instant("yesterday")
    assert str(flagged(e.value, "--at")) == (
        "--at 'yesterday' is not a time: give Unix seconds or ISO 8601, "
        "e.g. --at 2026-11-29T08:00:00+08:00"
    )
    assert units.EARLIEST_AT < instant("2000-01-01T00:00:01Z") < units.LATEST_AT


AFTER_2100 = (
    "is after 2100-01-01: give a time before it, as Unix seconds or ISO 8601, "
    "e.g. 2026-11-29T08:00:00+08:00"
)


@pytest.mark.parametrize(
    "value",
    [
        "9999-12-31T23:59:59+14:00",
        "9999-12-31T23:59:59-14:00",
        "253402300799",  # 9999-12-31T23:59:59Z in seconds: / 1000 is 1978, not milliseconds
        "4102444801",  # one second past 2100
        "2100-06-01T00:00:00Z",
        "1796000000000.0",  # not written as milliseconds are
        "1.796e12",
        "1e308",
    ],
)
def test_a_far_future_instant_is_after_2100_not_milliseconds(value: str) -> None:
    with pytest.raises(BadArgument) as e:
        instant(value)
    assert str(e.value) == f"{value!r} {AFTER_2100}"
    assert str(flagged(e.value, "--at")).endswith("e.g. --at 2026-11-29T08:00:00+08:00")


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("1796000000000", "1796000000"),
        ("946684800000", "946684800"),
        (" 4102444800000 ", "4102444800"),
    ],
)
def test_only_digits_between_2000_and_2100_once_divided_are_milliseconds(
    value: str, seconds: str
) -> None:
    with pytest.raises(BadArgument) as e:
        instant(value)
    assert str(e.value) == f"{value!r} looks like milliseconds: give seconds, e.g. {seconds}"


def test_a_far_future_time_is_outside_2000_2100_as_every_form_says_it() -> None:
    for value in ("253402300799", "2100-06-01T00:00:00Z", "2100-01", "21000101", "1999-12-31"):
        with pytest.raises(BadArgument) as e:
            units.time_spec(value)
        assert str(e.value) == (
            f"{value!r} is outside 2000-2100: give {units.TIME_FORMS}, e.g. 2026-11-29"
        )


# ---- numbers and text ------------------------------------------------------------------------


def test_numbers() -> None:
    assert number("0.5", 0, 1, "0.9", lo_open=True) == 0.5
    assert number(" 7 ", 1, 10, "3", integer=True) == 7
    with pytest.raises(BadArgument) as e:
        number("90", 0, 1, "0.9", unit="a fraction", fraction=True)
    assert str(e.value) == "'90' looks like a percentage: give a fraction, e.g. 0.9"
    with pytest.raises(BadArgument) as e:
        number("2000000", 0, 1_000_000, "10")
    assert str(e.value) == "'2000000' is out of range: give a number from 0 to 1000000, e.g. 10"
    assert port("8000") == 8000 and port("0", zero=True) == 0
    with pytest.raises(BadArgument, match="is out of range: give a port from 1 to 65535"):
        port("0")
    assert short_text("qwen3-8b", "m") == "qwen3-8b"
    with pytest.raises(BadArgument) as e:
        short_text("a\x1bb", "qwen3-8b")
    assert str(e.value) == (
        "'a\\x1bb' is unprintable: give up to 256 printable characters, e.g. qwen3-8b"
    )


# ---- HOST:PORT -------------------------------------------------------------------------------


def test_host_port() -> None:
    assert host_port("127.0.0.1:9464") == ("127.0.0.1", 9464)
    assert host_port("[::1]:9095") == ("::1", 9095)
    assert host_port("[fe80::1%eth0]:80") == ("fe80::1%eth0", 80)
    assert host_port("gpu1:0") == ("gpu1", 0)
    refusals = {
        ":9464": "':9464' is not HOST:PORT: give HOST:PORT, e.g. 127.0.0.1:9464 "
        "(0.0.0.0:PORT listens on every interface)",
        "gpu1": "'gpu1' is not HOST:PORT: give HOST:PORT, e.g. 127.0.0.1:9464 "
        "(0.0.0.0:PORT listens on every interface)",
        "::1:9464": "'::1:9464': put an IPv6 address in brackets, e.g. [::1]:9464",
        "h:99999": "'h:99999': the port '99999' is not 0 to 65535: give HOST:PORT, "
        "e.g. 127.0.0.1:9464 (0.0.0.0:PORT listens on every interface)",
        "a b:1": "'a b:1' is not HOST:PORT",
    }
    for value, line in refusals.items():
        with pytest.raises(BadArgument) as e:
            host_port(value)
        assert str(e.value).startswith(line), value
    with pytest.raises(BadArgument, match="is not 1 to 65535"):
        host_port("h:0", zero=False)
    with pytest.raises(BadArgument) as e:
        host_port("::1:9464")
    assert str(flagged(e.value, "--listen")) == (
        "--listen '::1:9464': put an IPv6 address in brackets, e.g. --listen [::1]:9464"
    )


# ---- plain paths -----------------------------------------------------------------------------


def test_plain_paths() -> None:
    assert is_plain_path("/usr/bin/python3.11") and is_plain_path("/srv/a_b+c@d,e-f")
    for bad in ("usr/bin", "/a b", "/a$b", "/a\n", "/a'b", ""):
        assert not is_plain_path(bad), bad
    assert re.fullmatch(units.PLAIN_PATH_PATTERN, "/etc/x") is not None


def test_every_environment_name_is_the_projects() -> None:
    names = [v for k, v in vars(units).items() if k.endswith("_ENV")]
    assert names and all(n.startswith(units.ENV_PREFIX) for n in names)
    assert len(set(names)) == len(names)


# ---- no flag below the commands --------------------------------------------------------------

_FLAG = re.compile(r"--[A-Za-z]")

# Modules whose refusals still name a flag of their command, with why; each is to lose its
# entry once its messages carry fields instead (docs/architecture.md). The test below fails
# when a listed module no longer needs its entry.
STILL_WORDED_WITH_FLAGS: dict[str, str] = {}


def _flag_messages(path: Path) -> list[str]:
    """String constants inside ``raise`` statements that contain ``--`` and a letter."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Raise) and node.exc is not None:
            for sub in ast.walk(node.exc):
                text = sub.value if isinstance(sub, ast.Constant) else None
                if isinstance(text, str) and _FLAG.search(text):
                    found.append(f"{node.lineno}: {text!r}")
    return found


def test_no_module_below_the_commands_raises_with_a_flag() -> None:
    found: dict[str, list[str]] = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel.startswith("commands/") or rel in ("cli.py", "__main__.py"):
            continue
        messages = _flag_messages(path)
        if messages:
            found[rel] = messages
    unexpected = {k: v for k, v in found.items() if k not in STILL_WORDED_WITH_FLAGS}
    assert unexpected == {}, "give the error fields (.argument, .value, .example) instead"
    assert sorted(set(STILL_WORDED_WITH_FLAGS) - set(found)) == [], "drop the entry"


# ---- times as people type them ---------------------------------------------------------------


def test_time_spec_forms() -> None:
    assert units.time_spec("1796000000") == units.TimeSpec("1796000000", "instant", ts=1796000000)
    iso = "2026-12-01T08:00:00+08:00"
    assert units.time_spec(iso).ts == instant(iso)
    assert units.time_spec("2026-12-01") == units.TimeSpec(
        "2026-12-01", "local", local=datetime(2026, 12, 1), date_only=True
    )
    for text in ("2026-12-01T08:00", "2026-12-01 08:00", "2026-12-01T08:00:00"):
        assert units.time_spec(text).local == datetime(2026, 12, 1, 8)
        assert units.time_spec(text).date_only is False
    assert units.time_spec("today") == units.TimeSpec("today", "day", days_back=0)
    assert units.time_spec("yesterday") == units.TimeSpec("yesterday", "day", days_back=1)
    assert units.time_spec("7d") == units.TimeSpec("7d", "ago", seconds=7 * 86400)
    assert units.time_spec("90m").seconds == 5400
    # ccusage's YYYYMMDD (never Unix seconds: eight digits are before 2000) and a month
    assert units.time_spec("20261201") == units.TimeSpec(
        "20261201", "local", local=datetime(2026, 12, 1), date_only=True
    )
    assert units.time_spec("2026-12") == units.TimeSpec(
        "2026-12", "local", local=datetime(2026, 12, 1), date_only=True
    )
    # any ISO 8601 time without an offset is a local time; with one (or Z), an instant
    assert units.time_spec("2026-12-01T08:00:00.5").local == datetime(2026, 12, 1, 8, 0, 0, 500000)
    assert units.time_spec("2026-12-01T00:00:00Z").ts == 1_796_083_200
    assert units.time_spec(" 1796000000.5 ").ts == 1_796_000_000.5


def test_time_spec_refusals() -> None:
    forms = units.TIME_FORMS
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
            units.time_spec(value)
        assert str(e.value) == line


def test_a_duration_ago_is_bounded_like_a_date() -> None:
    cutoff = 1_796_000_000
    assert units.ago(cutoff, 7 * 86400) == cutoff - 7 * 86400
    assert units.ago(units.EARLIEST_AT + 60, 60) == units.EARLIEST_AT  # 2000-01-01 itself
    refusals = {
        (units.EARLIEST_AT + 60, 61, "61s", "since"): "since '61s' reaches back before "
        "2000-01-01: give a shorter duration, e.g. 7d",
        (cutoff, 36000 * 86400, "36000d", ""): "'36000d' reaches back before 2000-01-01: "
        "give a shorter duration, e.g. 7d",
        (cutoff, 10**6 * 86400, "", "window"): "window '1000000d' reaches back before "
        "2000-01-01: give a shorter duration, e.g. 7d",
        (cutoff, float("nan"), "nan", ""): "'nan' reaches back before 2000-01-01: give a "
        "shorter duration, e.g. 7d",
    }
    for (at, seconds, text, argument), line in refusals.items():
        with pytest.raises(BadArgument) as e:
            units.ago(at, seconds, text=text, argument=argument)
        assert str(e.value) == line
        assert e.value.argument == argument
    with pytest.raises(BadArgument) as e:
        units.ago(units.EARLIEST_AT, 1, text="1s", argument="until")
    assert str(flagged(e.value, "--until")) == (
        "--until '1s' reaches back before 2000-01-01: give a shorter duration, e.g. --until 7d"
    )


@pytest.mark.parametrize("text", ["1000000d", "300000d", "36526d", "5300w", "999999999999h"])
def test_a_duration_longer_than_2000_2100_is_refused_when_typed(text: str) -> None:
    """Before any zone or cutoff is known: from every cutoff it reaches back before 2000."""
    with pytest.raises(BadArgument) as e:
        units.time_spec(text)
    assert (
        str(e.value) == f"{text!r} reaches back before 2000-01-01: give a shorter duration, e.g. 7d"
    )
    century = units.LATEST_AT - units.EARLIEST_AT
    assert units.time_spec(f"{century:.0f}s") == units.TimeSpec(
        f"{century:.0f}s", "ago", seconds=century
    )
