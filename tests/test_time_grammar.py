"""One time grammar: every flag of every command that takes a time, against every form people
type (taken) and every form that is wrong (refused), with the same result and the same words
whatever the flag; then the same forms through the command line, one per flag."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from tests.conftest import run_cli
from vllm_ledger.cli import build_parser
from vllm_ledger.errors import BadArgument
from vllm_ledger.timespec import TimeSpec

# (form, kind, what it means): every form of timespec.TIME_FORMS.
TAKEN: list[tuple[str, str, Any]] = [
    ("2026-12-01", "local", datetime(2026, 12, 1)),
    ("20261201", "local", datetime(2026, 12, 1)),
    ("2026-12", "local", datetime(2026, 12, 1)),
    ("2026-12-01T08:00", "local", datetime(2026, 12, 1, 8)),
    ("2026-12-01 08:00", "local", datetime(2026, 12, 1, 8)),
    ("2026-12-01T08:00:30", "local", datetime(2026, 12, 1, 8, 0, 30)),
    ("2026-12-01T08:00:00+08:00", "instant", 1_796_083_200.0),
    ("2026-12-01T00:00:00Z", "instant", 1_796_083_200.0),
    ("1796083200", "instant", 1_796_083_200.0),
    ("1796083200.5", "instant", 1_796_083_200.5),
    ("today", "day", 0),
    ("yesterday", "day", 1),
    ("7d", "ago", 7 * 86400),
    ("90m", "ago", 5400),
]
# (form, the refusal's words after "FLAG 'FORM' ")
REFUSED: list[tuple[str, str]] = [
    ("soon", "is not a time"),
    ("2026-13-01", "is not a date"),
    ("20261301", "is not a date"),
    ("2026-13", "is not a date"),
    ("2026-12-01T25:00", "is not a time"),
    ("1999-12-31", "is outside 2000-2100"),
    ("2100-01-02T00:00:00Z", "is outside 2000-2100"),
    ("1796083200000", "looks like milliseconds"),
    ("nan", "is not a time"),
    ("", "is not a time"),
]


def _time_flags() -> dict[tuple[str, str], Callable[[str], Any]]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {
        (name, a.option_strings[0]): a.type
        for name, p in sub.choices.items()
        for a in p._actions
        if a.metavar == "TIME" and callable(a.type)
    }


FLAGS = _time_flags()


def test_the_flags_are_the_ones_we_know() -> None:
    assert sorted(FLAGS) == [
        ("cost", "--at"),
        ("declare-stop", "--from"),
        ("declare-stop", "--until"),
        ("enforce", "--at"),
        ("export", "--since"),
        ("export", "--until"),
        ("report", "--at"),
        ("report", "--since"),
        ("report", "--until"),
        ("status", "--at"),
        ("timeline", "--at"),
    ]


@pytest.mark.parametrize("where", sorted(FLAGS), ids=lambda w: " ".join(w))
def test_every_form_is_taken_by_every_flag_alike(where: tuple[str, str]) -> None:
    parse = FLAGS[where]
    for form, kind, meaning in TAKEN:
        spec = parse(form)
        assert isinstance(spec, TimeSpec), (where, form)
        assert spec.kind == kind, (where, form)
        got = {"local": spec.local, "instant": spec.ts, "day": spec.days_back, "ago": spec.seconds}
        assert got[kind] == meaning, (where, form)


@pytest.mark.parametrize("where", sorted(FLAGS), ids=lambda w: " ".join(w))
def test_every_wrong_form_is_refused_by_every_flag_in_the_same_words(
    where: tuple[str, str],
) -> None:
    flag = where[1]
    for form, words in REFUSED:
        with pytest.raises(BadArgument) as caught:
            FLAGS[where](form)
        assert str(caught.value).startswith(f"{flag} {form!r} {words}"), (where, str(caught.value))
        assert "\n" not in str(caught.value)


# Through the command line, one wrong form per flag: exit 2, one line naming the flag.
DECLARE = ["declare-stop", "--instance", "h:8000", "--reason", "x"]
CLI = {
    ("cost", "--at"): ["cost"],
    ("declare-stop", "--from"): DECLARE,
    ("declare-stop", "--until"): [*DECLARE, "--from", "2026-12-01"],
    ("enforce", "--at"): ["enforce", "--once", "--config", "budgets.toml"],
    ("export", "--since"): ["export"],
    ("export", "--until"): ["export", "--since", "2026-12-01"],
    ("report", "--at"): ["report"],
    ("report", "--since"): ["report"],
    ("report", "--until"): ["report", "--since", "2026-12-01"],
    ("status", "--at"): ["status"],
    ("timeline", "--at"): ["timeline"],
}


def test_the_command_line_says_it_in_one_line_for_every_flag(tmp_path: Any) -> None:
    assert sorted(CLI) == sorted(FLAGS)
    for (_cmd, flag), argv in CLI.items():
        code, out, err = run_cli(*argv, "--root", str(tmp_path), flag, "20261301")
        assert (code, out) == (2, ""), (argv, err)
        assert err.startswith(f"vllm-ledger: error: {flag} '20261301' is not a date"), err
        assert err.count("\n") == 1, err
