"""``vllm_ledger/units.py``: the one vocabulary (durations, instants, numbers, plain paths, a
duration ago), its exact outputs in every style, and its refusals worded without a flag; and no
module below the commands words a refusal with a command-line flag (docs/architecture.md,
layers)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from vllm_ledger import units
from vllm_ledger.commands._refusals import flagged
from vllm_ledger.errors import BadArgument
from vllm_ledger.units import (
    duration_seconds,
    format_duration,
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


# ---- a duration ago ----------------------------------------------------------------------------


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
