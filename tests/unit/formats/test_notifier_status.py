"""formats/notifier_status.py: the text and JSON of `notifier status` from what the state file
holds; what came from the file or a platform shown escaped."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vllm_ledger.formats.notifier_status import NotifierStatus, render_json, render_text
from vllm_ledger.notify.outbox import Delivery
from vllm_ledger.notify.state_read import BudgetLevel

T = 1_795_000_000.0  # 2026-11-18 11:06:40 UTC
SUMMARY = {
    "sent": 4,
    "failed": 1,
    "unknown": 1,
    "pending": 0,
    "sending": 0,
    "cursor": 5,
    "dropped_total": 0,
    "unanswered": 0,
    "not_shown_notes_total": 0,
    "not_shown_alerts_total": 0,
}


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _status(failures: list[Delivery], health: dict[int, tuple[str, float]]) -> NotifierStatus:
    return NotifierStatus(Path("private.notifier.sqlite"), SUMMARY, failures, failures, health)


def test_the_text_names_each_failure_and_the_health() -> None:
    failures = [
        Delivery(3, "reply", "t", "unknown", "interrupted", None, None, T + 4, T + 4),
        Delivery(1, "reply", "t", "failed", "http_status", 500, None, T, T),
    ]
    assert render_text(_status(failures, {19001: ("up", T + 1), 19002: ("down", T)})) == (
        "state private.notifier.sqlite\n"
        "deliveries: sent 4, failed 1, unknown 1, pending 0, sending 0; dropped (outbox full) 0\n"
        "alerts left out by Alertmanager (max_alerts): none\n"
        "commands: cursor 5, unanswered 0\n"
        "health: :19001 up since 2026-11-18 11:06:41 +00:00, "
        ":19002 DOWN since 2026-11-18 11:06:40 +00:00\n"
        "budgets near or over: none (as last polled)\n"
        "digests: none posted\n"
        "failed (never resent by themselves; `vllm-ledger notifier resend ID`):\n"
        "  #3 reply unknown interrupted at 2026-11-18 11:06:44 +00:00\n"
        "  #1 reply failed http_status 500 at 2026-11-18 11:06:40 +00:00\n"
    )


def test_nothing_failed_and_no_health_yet() -> None:
    lines = render_text(_status([], {})).splitlines()
    assert lines[4:] == [
        "health: none observed yet",
        "budgets near or over: none (as last polled)",
        "digests: none posted",
        "failed: none",
    ]


def test_a_reason_from_the_state_file_cannot_forge_lines() -> None:
    evil = "timeout\n\x1b[2Jfailed: none"
    text = render_text(_status([Delivery(2, "alert", "t", "failed", evil, None, None, T, T)], {}))
    assert "\x1b" not in text
    assert text.splitlines()[-1] == (
        "  #2 alert failed timeout\\x0a\\x1b[2Jfailed: none at 2026-11-18 11:06:40 +00:00"
    )
    doc = json.loads(render_json(_status([], {})))
    assert doc["cursor"] == 5 and "cursor" not in doc["deliveries"]
    assert doc["deliveries"]["dropped_total"] == 0 and doc["failures"] == []


def test_alerts_left_out_by_alertmanager_are_counted_in_text_and_json() -> None:
    summary = {**SUMMARY, "not_shown_notes_total": 2, "not_shown_alerts_total": 75}
    s = NotifierStatus(Path("private.notifier.sqlite"), summary, [], [], {})
    assert render_text(s).splitlines()[2] == (
        "alerts left out by Alertmanager (max_alerts): 75, in 2 group notification(s), "
        "each noted in the chat"
    )
    doc = json.loads(render_json(s))
    assert doc["alerts_not_shown"] == {"alerts_total": 75, "notes_total": 2}
    assert not any(k.startswith("not_shown") for k in doc["deliveries"])


def test_budgets_near_or_over_and_the_digests_posted_in_text_and_json() -> None:
    hard = BudgetLevel(
        "team-a-day", ".12:19001", "key team-a", "total", "hard", 2_100_000.0, 2e6, 1.05,
        int(T) + 3600, 2_500_000.0,
    )  # fmt: skip
    soft = BudgetLevel(
        "spend", ":19002", "key (budget spend)", "cost CNY", "soft", 8.5, 10.0, 0.85,
        int(T) + 7200, None,
    )  # fmt: skip
    evil = BudgetLevel(
        "x", "\x1b[2J", "user \nforged", "total", "soft", 1.0, 1.0, 1.0, int(T), None
    )
    s = NotifierStatus(
        Path("private.notifier.sqlite"), SUMMARY, [], [], {},
        budgets=[(hard, T), (soft, T + 1), (evil, T)],
        digests=[("digest:day:2026-11-17", 7, T + 30)],
    )  # fmt: skip
    lines = render_text(s).splitlines()
    start = lines.index("budgets near (soft) or over (hard), as last polled:")
    assert lines[start + 1 : start + 5] == [
        "  HARD key team-a .12:19001: 2,100,000 of 2,000,000 total (105.0%), period ends "
        "2026-11-18 12:06:40 +00:00, projected 2,500,000 [team-a-day; polled "
        "2026-11-18 11:06:40 +00:00]",
        "  SOFT key (budget spend) :19002: 8.50 of 10.00 cost CNY (85.0%), period ends "
        "2026-11-18 13:06:40 +00:00 [spend; polled 2026-11-18 11:06:41 +00:00]",
        "  SOFT user \\x0aforged \\x1b[2J: 1 of 1 total (100.0%), period ends "
        "2026-11-18 11:06:40 +00:00 [x; polled 2026-11-18 11:06:40 +00:00]",
        "digests: day:2026-11-17 #7 at 2026-11-18 11:07:10 +00:00",
    ]
    doc = json.loads(render_json(s))
    assert doc["budgets"][0] == {
        "name": "team-a-day", "place": ".12:19001", "who": "key team-a", "figure": "total",
        "level": "hard", "used": 2_100_000.0, "limit": 2e6, "fraction": 1.05,
        "end": int(T) + 3600, "projected": 2_500_000.0, "polled": T,
    }  # fmt: skip
    assert doc["digests"] == [{"key": "digest:day:2026-11-17", "delivery_id": 7, "queued": T + 30}]


def test_a_host_that_cannot_use_its_budgets_file_and_budgets_past_the_document() -> None:
    problem = BudgetLevel("", ":19001", "", "", "problem", 0.0, 0.0, 0.0, 0, None)
    more = BudgetLevel("", ":19002", "", "", "more", 3.0, 0.0, 0.0, 0, None)
    s = NotifierStatus(Path("p.sqlite"), SUMMARY, [], [], {}, budgets=[(problem, T), (more, T)])
    lines = render_text(s).splitlines()
    start = lines.index("budgets near (soft) or over (hard), as last polled:")
    assert lines[start + 1 : start + 3] == [
        "  PROBLEM :19001: the host cannot use its budgets file (run `vllm-ledger status "
        "--budgets FILE` there to see why; docs/budgets.md)",
        "  MORE :19002: 3 more near or over, past the 16 the host's document lists (not announced)",
    ]
