"""Durations are bounded like dates: a time flag (``--since``, ``--until``, ``--at``,
``declare-stop --from/--until``) or a timeline's window that reaches outside 2000-2100 is one
line naming the flag, exit 2, nothing on standard output, in every command, through the real
command line (a process per case, as a user runs it).

A duration ago longer than 2000-2100 is refused as the command line is parsed; a shorter one
that still reaches back before 2000-01-01 from the cutoff is refused where it is resolved
(``units.ago``), before anything is printed (``export`` once printed its CSV header, then
failed on the year -711)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.ledgers import ev, write_ledger
from vllm_ledger.cli import build_parser
from vllm_ledger.timespec import TIME_FORMS

END_TS = 1_796_000_000.0  # 2026-11-29T21:33:20Z
START_TS = END_TS - 2 * 86400

SHORTER = "give a shorter duration"
OUTSIDE = f"is outside 2000-2100: give {TIME_FORMS}"
AT_EXAMPLE = "e.g. --at 2026-11-29"
# 1,000,000 and 300,000 days before the ledger's end, as Unix seconds (years -711 and 1205).
AT_MINUS_711 = f"{END_TS - 1_000_000 * 86400:.0f}"
AT_1205 = f"{END_TS - 300_000 * 86400:.0f}"


def before_2000(flag: str, value: str) -> str:
    return (
        f"{flag} {value!r} reaches back before 2000-01-01: {SHORTER}, e.g. {flag} 7d"
        if flag != "--window"
        else f"--window {value!r} reaches back before 2000-01-01: {SHORTER}, e.g. --window 7d"
    )


def outside(flag: str, value: str) -> str:
    example = AT_EXAMPLE.replace("--at", flag)
    return f"{flag} {value!r} {OUTSIDE}, {example}"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bounds") / "ledger"
    events = [ev(START_TS + k * 3600 + 0.5, prompt=5, gen=2) for k in range(48)]
    write_ledger(
        path, "run-1", start_ts=START_TS, end_ts=END_TS, events=events, heartbeat_every_s=3600
    )
    return path


# The refusals every form of the report gives: parsed (longer than a century) and resolved
# (a cutoff in the first days of 2000, or a duration of 98 years and more).
DURATIONS = [
    (["--since", "1000000d"], before_2000("--since", "1000000d")),
    (["--since", "300000d"], before_2000("--since", "300000d")),
    (["--since", "1d", "--until", "1000000d"], before_2000("--until", "1000000d")),
    (["--at", "2000-01-02T00:00:00Z", "--since", "2d"], before_2000("--since", "2d")),
    (["--since", "36000d"], before_2000("--since", "36000d")),
    (["--since", "3d", "--until", "36000d"], before_2000("--until", "36000d")),
]
INSTANTS = [
    (["--at", AT_MINUS_711], outside("--at", AT_MINUS_711)),
    (["--at", AT_1205], outside("--at", AT_1205)),
    (["--at", "1205-01-01T00:00:00Z"], outside("--at", "1205-01-01T00:00:00Z")),
]
# Every case in text; in the other forms the three the first report named, one resolved and
# one instant.
REPORT_FORMS = {"text": [], "json": ["--json"], "csv": ["--csv"], "by month": ["--by", "month"]}
EACH_FORM = [*DURATIONS[:3], DURATIONS[4], INSTANTS[0]]

CASES: list[tuple[str, list[str], str]] = [
    *(
        (f"report {form} {' '.join(flags)}", ["report", *extra, *flags], line)
        for form, extra in REPORT_FORMS.items()
        for flags, line in (DURATIONS + INSTANTS if form == "text" else EACH_FORM)
    ),
    *(
        (f"export {' '.join(flags)}", ["export", *flags], line)
        for flags, line in DURATIONS
        if "--at" not in flags
    ),
    ("export jsonl", ["export", "--format", "jsonl", *DURATIONS[0][0]], DURATIONS[0][1]),
    (
        "export --by month",
        ["export", "--by", "month", "--since", "300000d"],
        before_2000("--since", "300000d"),
    ),
    *(
        (f"timeline {' '.join(flags)}", ["timeline", *flags], line)
        for flags, line in [
            *INSTANTS,
            (["--window", "36000d", "--step", "2w"], before_2000("--window", "36000d")),
            (["--window", "36000d", "--step", "2w", "--csv"], before_2000("--window", "36000d")),
            (["--window", "36000d", "--step", "2w", "--json"], before_2000("--window", "36000d")),
            (
                ["--at", "2000-01-03T00:00:00Z", "--window", "4d", "--step", "1h"],
                before_2000("--window", "4d"),
            ),
        ]
    ),
    *((f"cost {' '.join(flags)}", ["cost", *flags], line) for flags, line in INSTANTS),
    *((f"status {' '.join(flags)}", ["status", *flags], line) for flags, line in INSTANTS),
    *(
        (f"enforce --at {value}", ["enforce", "--at", value], outside("--at", value))
        for value in (AT_MINUS_711, "1205-01-01T00:00:00Z")
    ),
    *(
        (
            f"declare-stop {flag} {value}",
            [
                "declare-stop",
                "--instance",
                "testhost:8000",
                "--reason",
                "upgrade",
                *(["--from", value, "--until", f"{END_TS:.0f}"] if flag == "--from" else []),
                *(["--from", f"{START_TS:.0f}", "--until", value] if flag == "--until" else []),
            ],
            outside(flag, value),
        )
        for flag in ("--from", "--until")
        for value in (AT_MINUS_711, "1205-01-01T00:00:00Z")
    ),
]


@pytest.mark.parametrize(("argv", "line"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_time_outside_2000_2100_is_one_line_naming_the_flag(
    root: Path, argv: list[str], line: str
) -> None:
    code, out, err = run_cli(*argv[:1], "--root", str(root), *argv[1:])
    assert (code, out, err) == (2, "", f"vllm-ledger: error: {line}\n")


def test_every_time_flag_of_every_command_is_covered() -> None:
    """A new command or flag that takes a time or a window ending now needs its cases here."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flags = {
        (name, a.option_strings[0])
        for name, p in sub.choices.items()
        for a in p._actions
        if a.metavar == "TIME" or (name, a.dest) == ("timeline", "window")
    }
    covered = {(c[1][0], f) for c in CASES for f in c[1] if f.startswith("--")}
    assert flags <= covered, sorted(flags - covered)
    assert flags == {
        ("report", "--at"),
        ("report", "--since"),
        ("report", "--until"),
        ("export", "--since"),
        ("export", "--until"),
        ("timeline", "--at"),
        ("timeline", "--window"),
        ("cost", "--at"),
        ("status", "--at"),
        ("declare-stop", "--from"),
        ("declare-stop", "--until"),
        ("enforce", "--at"),
    }


def test_the_bounds_themselves_are_taken(root: Path) -> None:
    """A duration that reaches back to 2000-01-01 exactly is taken; a second more is not."""
    at = "2000-01-02T00:00:00Z"
    code, out, err = run_cli("report", "--root", str(root), "--at", at, "--since", "1d", "--json")
    assert (code, err) == (0, "")
    assert '"start": 946684800' in out
    code, out, err = run_cli("report", "--root", str(root), "--at", at, "--since", "86401s")
    assert (code, out, err) == (2, "", f"vllm-ledger: error: {before_2000('--since', '86401s')}\n")
